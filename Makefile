# zbsched - one Makefile. Outputs under $(BUILD); `make V=1` shows commands.
# The library (src/ schedules/ solver/, headers in include/zbsched/) builds
# $(BUILD)/libzbsched.a; the two programs link it and include only
# <zbsched/*.h>: cli/ -> $(BUILD)/zbsched, zbexec/ -> $(BUILD)/zbexec.
#   make            both programs
#   make test       unit tests (tests/unit, Criterion), CLI tests
#                   (tests/cli) and executor tests (tests/exec, MPI on the
#                   cpu backend); SAN=1 for ASan+UBSan
#   make bench      generation, solver and schedule-quality benchmarks
#                   -> docs/bench*.md, then the solver's slow test grids,
#                   whole (tools/bench_solver_check.c)
#   make check-quality  the quality gate: the building blocks' margins on
#                   the unit tests' profiles (tools/check_quality.c)
#   make regen      rewrite the golden files under tests/data
#   make memcheck   valgrind memcheck over the CLI's main paths
#   make fuzz       libFuzzer targets (clang) for FUZZ_SECONDS each
#   make clean

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
else ifeq ($(SAN),fuzz)
# The library as libFuzzer wants it (make fuzz sets this): clang only.
BUILD ?= build-fuzz
CC := clang
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined \
            -fno-sanitize-recover=all -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

CC ?= cc
OPT ?= -O2
CFLAGS_ALL := -std=c11 $(OPT) -g -Wall -Wextra -Wpedantic -Wshadow \
              -D_POSIX_C_SOURCE=200809L -pthread -Iinclude -Ischedules $(SANFLAGS) \
              $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) -pthread $(LDFLAGS)
LIBS := -lglpk -lcjson -lm

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(wildcard src/*.c) $(wildcard schedules/*.c schedules/*/*.c) \
           $(wildcard solver/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libzbsched.a
ZBSCHED := $(BUILD)/zbsched
CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard cli/*.c))

TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_RUNNER := $(BUILD)/tests/unit/run

.PHONY: all test test-unit test-cli bench bench-effort regen clean memcheck
all: $(ZBSCHED)

# Objects depend on the flags they were built with (git's GIT-CFLAGS).
$(BUILD)/flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL)' > $@
.PHONY: FORCE

$(BUILD)/%.o: %.c $(BUILD)/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(ZBSCHED): $(CLI_OBJ) $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(TEST_RUNNER): $(TEST_OBJ) $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcriterion $(LIBS)

# The unit runner goes last, so its summary line ends the run (other
# suites hang theirs on `test` as prerequisites). With SAN=1 a leak report
# fails the run even though Criterion 2.4 exits 0 after one.
test: test-cli $(TEST_RUNNER)
	$(Q)$(TEST_RUNNER) -j2 2>&1 | tee $(BUILD)/unit.log; \
	status=$${PIPESTATUS[0]}; \
	if grep -q 'ERROR: LeakSanitizer' $(BUILD)/unit.log; then \
	    echo 'LeakSanitizer reported a leak' >&2; exit 1; fi; \
	exit $$status

test-unit: $(TEST_RUNNER)
	$(Q)$(TEST_RUNNER) -j2

# The shell suites print TAP through one harness (tests/lib/tap.sh).
test-cli: $(ZBSCHED)
	$(Q)ZBSCHED=$(ZBSCHED) bash tests/lib/prove.sh cli tests/cli

BENCH := $(BUILD)/tools/bench
$(BENCH): $(BUILD)/tools/bench.o $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

BENCH_QUALITY := $(BUILD)/tools/bench_quality
$(BENCH_QUALITY): $(BUILD)/tools/bench_quality.o $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# The solver's slow test grids, whole (the unit suite runs a slice).
SOLVER_CHECK := $(BUILD)/tools/bench_solver_check
$(SOLVER_CHECK): $(BUILD)/tools/bench_solver_check.o $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# The quality gate (tools/check_quality.c): the margins the unit tests'
# orderings leave out, measured; run on purpose, not by `make test`.
CHECK_QUALITY := $(BUILD)/tools/check_quality
$(CHECK_QUALITY): $(BUILD)/tools/check_quality.o $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

.PHONY: check-quality
check-quality: $(CHECK_QUALITY)
	$(Q)$(CHECK_QUALITY)

bench: $(BENCH) $(BENCH_QUALITY) $(SOLVER_CHECK) $(ZBSCHED)
	$(Q)bash tools/bench.sh $(BENCH) docs/bench.md
	$(Q)BUILD=$(BUILD) bash tools/bench_ilp.sh 60 2
	$(Q)bash tools/bench_quality.sh $(BENCH_QUALITY) $(ZBSCHED) \
	    docs/bench-quality.md
	$(Q)$(SOLVER_CHECK)

# Not part of `bench` (about 40 min): the quality grid at more
# search effort -> docs/bench-effort.md.
bench-effort: $(BENCH_QUALITY)
	$(Q)bash tools/bench_effort.sh $(BENCH_QUALITY) docs/bench-effort.md

regen: $(ZBSCHED)
	$(Q)bash tools/regen.sh $(ZBSCHED)

memcheck: $(ZBSCHED)
	$(Q)bash tools/memcheck.sh $(ZBSCHED)

# The manual page is written from the command table (`zbsched help
# --man`); tests/cli/t_manual.sh fails when docs/zbsched.1 is not current.
.PHONY: man install
man: $(ZBSCHED)
	$(Q)$(ZBSCHED) help --man >docs/zbsched.1.tmp && \
	    mv docs/zbsched.1.tmp docs/zbsched.1

# zbsched, the executors built, the manual page and the bash completion
# under $(DESTDIR)$(PREFIX).
PREFIX ?= /usr/local
install: $(ZBSCHED)
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin \
	    $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(Q)install -m 755 $(ZBSCHED) $(DESTDIR)$(PREFIX)/bin/zbsched
	$(Q)for p in $(EXEC_PROGRAMS); do [ ! -x $$p ] || \
	    install -m 755 $$p $(DESTDIR)$(PREFIX)/bin/; done
	$(Q)install -m 644 docs/zbsched.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	$(Q)install -m 644 tools/zbsched-completion.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/zbsched

# libFuzzer targets (tests/fuzz/fuzz_*.c): `make fuzz` builds them with
# clang under build-fuzz and runs each for FUZZ_SECONDS from its seed
# corpus and dictionary (tools/fuzz.sh); no clang: a note, not a failure.
FUZZ_SECONDS ?= 60
FUZZ_NAMES := profile schedule torch_csv trace
FUZZ_BINS := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
.PHONY: fuzz fuzz-run
fuzz:
	$(Q)if command -v clang >/dev/null; then \
	    $(MAKE) --no-print-directory SAN=fuzz fuzz-run; \
	else echo "fuzz: clang is missing; skipped (tools/deps.sh --fuzz)"; fi

fuzz-run: $(FUZZ_BINS)
	$(Q)bash tools/fuzz.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_NAMES)

$(BUILD)/fuzz/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -fsanitize=fuzzer -o $@ $^ $(LIBS)

clean:
	rm -rf build build-san build-fuzz $(BUILD)

SHELL := /bin/bash
-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(CLI_OBJ:.o=.d) \
         $(BUILD)/tools/bench.d $(BUILD)/tools/bench_quality.d \
         $(BUILD)/tools/bench_solver_check.d $(BUILD)/tools/check_quality.d

# ---- zbexec (zbexec/) ----
# The executor, `mpirun -np P $(BUILD)/zbexec SCHEDULE.json`: MPI (mpicc) and
# OpenBLAS, no CUDA. Where $(CUDA_HOME)/bin/nvcc exists (CUDA=0 turns it
# off) a second program, $(BUILD)/zbexec-cuda, adds the cuda backend (NCCL +
# cuBLAS) and defaults to it: only ranks that use a GPU load the CUDA
# libraries. The two share every object but the backend table.
#   make test-mpi      executor tests on the cpu backend (part of `make test`)
#   make test-gpu      the same checks on the cuda backend (needs a GPU)
#   make bench-zbexec  synthetic-mode benchmark -> docs/zbexec-bench.md
MPICC ?= mpicc
CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA ?= $(if $(wildcard $(NVCC)),1,0)
NVCC_ARCH ?= -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=[sm_90,compute_90]
MPI_CFLAGS ?= $(shell $(MPICC) --showme:compile 2>/dev/null)

ZBEXEC := $(BUILD)/zbexec
ZBEXEC_CUDA := $(BUILD)/zbexec-cuda
EXEC_SHARED := $(patsubst zbexec/%.c,$(BUILD)/zbexec-obj/%.o,\
                 $(filter-out zbexec/backends.c,$(wildcard zbexec/*.c)))
EXEC_OBJ := $(EXEC_SHARED) $(BUILD)/zbexec-obj/backends.o
# The cuda backend's host side (zbexec/cuda_int.h lists its files): built
# by nvcc here and by the host C++ compiler for the emulation below.
CUDA_HOST := cuda_host cuda_math cuda_setup cuda_nccl cuda_mpi cuda_xfer \
             cuda_coll cuda_measure
EXEC_CUDA_OBJ := $(EXEC_SHARED) $(BUILD)/zbexec-cuda-obj/backends.o \
                 $(CUDA_HOST:%=$(BUILD)/zbexec-cuda-obj/%.o) \
                 $(BUILD)/zbexec-cuda-obj/cuda.o
EXEC_CFLAGS := $(CFLAGS_ALL) -pthread
EXEC_LIBS := -lopenblas -pthread
EXEC_NVFLAGS := -std=c++17 $(OPT) -Iinclude -I$(NCCL_HOME)/include \
                $(MPI_CFLAGS) $(NVCC_ARCH) -Xcompiler -Wall,-Wextra
EXEC_CUDA_LIBS := $(EXEC_LIBS) -L$(CUDA_HOME)/lib64 -L$(NCCL_HOME)/lib \
                  -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,$(NCCL_HOME)/lib \
                  -lnccl -lcublas -lcudart -lstdc++
EXEC_PROGRAMS := $(ZBEXEC)
ifeq ($(CUDA),1)
EXEC_PROGRAMS += $(ZBEXEC_CUDA)
endif

all: $(EXEC_PROGRAMS)
test: test-mpi
.PHONY: test-mpi test-gpu bench-zbexec

$(BUILD)/zbexec-obj/flags: FORCE
	@mkdir -p $(@D)
	@echo '$(MPICC) $(EXEC_CFLAGS) $(NVCC) $(EXEC_NVFLAGS)' | cmp -s - $@ || \
	    echo '$(MPICC) $(EXEC_CFLAGS) $(NVCC) $(EXEC_NVFLAGS)' > $@

$(BUILD)/zbexec-obj/%.o: zbexec/%.c $(BUILD)/zbexec-obj/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  MPICC   $<")
	$(Q)$(MPICC) $(EXEC_CFLAGS) -MMD -MP -c $< -o $@

# The cuda program's backend table lists the cuda backend too.
$(BUILD)/zbexec-cuda-obj/backends.o: zbexec/backends.c $(BUILD)/zbexec-obj/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  MPICC   $< (cuda)")
	$(Q)$(MPICC) $(EXEC_CFLAGS) -DZB_HAVE_CUDA -MMD -MP -c $< -o $@

$(BUILD)/zbexec-cuda-obj/%.o: zbexec/%.cu $(BUILD)/zbexec-obj/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(EXEC_NVFLAGS) -MMD -MP -c $< -o $@

$(ZBEXEC): $(EXEC_OBJ) $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(MPICC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS) $(EXEC_LIBS)

$(ZBEXEC_CUDA): $(EXEC_CUDA_OBJ) $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(MPICC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS) $(EXEC_CUDA_LIBS)

# The transformer's gradients against finite differences (t_transformer.sh).
TF_GRAD := $(BUILD)/tests/exec/tf_grad
$(TF_GRAD): tests/exec/tf_grad.c $(filter-out %/main.o,$(EXEC_OBJ)) $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(MPICC) $(EXEC_CFLAGS) -Izbexec $(LDFLAGS_ALL) -o $@ $^ $(LIBS) \
	    $(EXEC_LIBS)

test-mpi: $(EXEC_PROGRAMS) $(ZBSCHED) $(TF_GRAD)
	$(Q)ZBEXEC=$(ZBEXEC) ZBSCHED=$(ZBSCHED) TF_GRAD=$(TF_GRAD) \
	    ZBEXEC_CUDA=$(if $(filter 1,$(CUDA)),$(ZBEXEC_CUDA)) \
	    bash tests/lib/prove.sh exec tests/exec

# A run gets NCCL when each of its ranks has a GPU of its own, else the
# host-staged transport (--transport mpi): one GPU runs every test that
# way (tests/exec/lib.sh decides). Then every family's predicted vs
# realized bubble and memory -> $(BUILD)/gpu-report.md (tests/exec/
# gpu_report.sh; docs/zbexec-bench.md keeps the last one from a GPU).
ifeq ($(CUDA),1)
test-gpu: $(ZBEXEC_CUDA) $(ZBSCHED)
	$(Q)ZBEXEC=$(ZBEXEC_CUDA) ZBSCHED=$(ZBSCHED) BACKEND=cuda \
	    bash tests/lib/prove.sh exec tests/exec; s=$$?; \
	    bash tests/exec/gpu_report.sh $(ZBSCHED) $(ZBEXEC_CUDA) \
	        $(BUILD)/gpu-report.md && exit $$s
else
test-gpu:
	@echo "make test-gpu: needs zbexec-cuda, which needs $(NVCC)" >&2
	@exit 1
endif

bench-zbexec: $(ZBEXEC) $(ZBSCHED)
	$(Q)bash tools/zbexec-bench.sh $(ZBSCHED) $(ZBEXEC) docs/zbexec-bench.md

# ---- zbexec emulation (tests/emu/) ----
# $(BUILD)/zbexec-emu: the cuda backend's host side (CUDA_HOST's files, the
# very sources zbexec-cuda compiles with nvcc) built by the host C++
# compiler against a fake of the CUDA runtime, cuBLAS and NCCL
# (tests/emu/fake_cuda.cc: streams with random lags, events, lazy NCCL
# connection with rendezvous semantics, groups), so its transport runs
# under MPI in CI without a GPU or a CUDA installation.
#   make test-emu      every family on p 2-8 (and dp 2) under a watchdog
ZBEXEC_EMU := $(BUILD)/zbexec-emu
EMU_CXX ?= $(CXX)
EMU_CXXFLAGS := -std=c++17 $(OPT) -g -DZB_CUDA_EMU -Iinclude -Izbexec \
                -Itests/emu $(MPI_CFLAGS) -Wall -Wextra
EMU_CUDA_OBJ := $(CUDA_HOST:%=$(BUILD)/zbexec-emu-obj/%.o)
EMU_OBJ := $(EXEC_SHARED) $(BUILD)/zbexec-cuda-obj/backends.o \
           $(EMU_CUDA_OBJ) \
           $(BUILD)/zbexec-emu-obj/kernels.o \
           $(BUILD)/zbexec-emu-obj/fake_cuda.o
.PHONY: test-emu

$(EMU_CUDA_OBJ): $(BUILD)/zbexec-emu-obj/%.o: zbexec/%.cu \
                 $(BUILD)/zbexec-obj/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $< (emulation)")
	$(Q)$(EMU_CXX) $(EMU_CXXFLAGS) -x c++ -MMD -MP -c $< -o $@

$(BUILD)/zbexec-emu-obj/%.o: tests/emu/%.cc $(BUILD)/zbexec-obj/flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(EMU_CXX) $(EMU_CXXFLAGS) -MMD -MP -c $< -o $@

$(ZBEXEC_EMU): $(EMU_OBJ) $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(MPICC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS) $(EXEC_LIBS) -lstdc++

test-emu: $(ZBEXEC_EMU) $(ZBEXEC) $(ZBSCHED)
	$(Q)ZBEXEC=$(ZBEXEC_EMU) ZBSCHED=$(ZBSCHED) \
	    bash tests/lib/prove.sh emu tests/emu

-include $(EXEC_OBJ:.o=.d) $(EXEC_CUDA_OBJ:.o=.d) $(EMU_OBJ:.o=.d)
