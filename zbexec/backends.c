/* backends.c - the table of executor backends. To add one: write
 * zbexec/<name>.c (or .cu) defining a const struct zb_executor and
 * list it here; this table holds the only #ifdef on what was built.
 * Compiled twice (Makefile): without ZB_HAVE_CUDA for zbexec, which links
 * no CUDA library, and with it for zbexec-cuda, where cuda comes first and
 * so is the default. */
#include <string.h>
#include "exec.h"

const struct zb_executor *const zb_executors[] = {
#ifdef ZB_HAVE_CUDA
    &zb_executor_cuda,
#endif
    &zb_executor_cpu,
    NULL,
};

int exec_backend_find(const char *name, const struct zb_executor **out,
                      struct zb_error *err)
{
    if (!name) {
        *out = zb_executors[0];
        return 0;
    }
    for (int i = 0; zb_executors[i]; i++)
        if (!strcmp(zb_executors[i]->name, name)) {
            *out = zb_executors[i];
            return 0;
        }
    if (!strcmp(name, "cuda"))
        return zb_error_set(err, ZB_EINVAL, "backend 'cuda' is not in this "
                            "program: run zbexec-cuda (built where "
                            "$(CUDA_HOME)/bin/nvcc exists, without CUDA=0)");
    return zb_error_set(err, ZB_EINVAL, "unknown backend '%s' (built in: "
                        "%s%s)", name, zb_executors[0]->name,
                        zb_executors[1] ? ", cpu" : "");
}
