#!/bin/bash
# run.sh - the zbexec tests: every t_*.sh here, in order, on the backend
# named by $BACKEND (cpu for `make test-mpi`, cuda for `make test-gpu`).
# Needs $ZBEXEC and $ZBSCHED (the Makefile sets both). Exit 0 if all pass.
dir=$(dirname "$0")
. "$dir/lib.sh"
for t in "$dir"/t_*.sh; do
    echo "# $(basename "$t")"
    . "$t"
done
finish
