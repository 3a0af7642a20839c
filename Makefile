# zbsched - one Makefile. Outputs under $(BUILD); `make V=1` shows commands.
#   make            build/zbsched (and the executor, see tools/zbexec)
#   make test       unit tests (Criterion), CLI tests; SAN=1 for ASan+UBSan
#   make bench      generation benchmark -> docs/bench.md
#   make clean

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

CC ?= cc
OPT ?= -O2
CFLAGS_ALL := -std=c11 $(OPT) -g -Wall -Wextra -Wpedantic -Wshadow \
              -D_POSIX_C_SOURCE=200809L -pthread -Iinclude $(SANFLAGS) \
              $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) -pthread $(LDFLAGS)
LIBS := -lglpk -lcjson -lm

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(filter-out src/main.c,$(wildcard src/*.c)) \
           $(wildcard schedules/*.c) $(wildcard solver/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libzbsched.a
ZBSCHED := $(BUILD)/zbsched

TEST_SRC := $(wildcard tests/test_*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_RUNNER := $(BUILD)/tests/unit

.PHONY: all test test-unit test-cli bench clean
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

$(ZBSCHED): $(BUILD)/src/main.o $(LIB)
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

test-cli: $(ZBSCHED)
	$(Q)ZBSCHED=$(ZBSCHED) bash tests/cli/run.sh

BENCH := $(BUILD)/tools/bench
$(BENCH): $(BUILD)/tools/bench.o $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

bench: $(BENCH)
	$(Q)bash tools/bench.sh $(BENCH) docs/bench.md

clean:
	rm -rf build build-san

SHELL := /bin/bash
-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/src/main.d \
         $(BUILD)/tools/bench.d
