"""`python -m examflow` and the `examflow` program."""

import os


def run() -> int:
    # numpy's OpenBLAS starts a thread per core when it loads, and a command's matrix work is too small
    # to gain from them: on two cores they cost `examflow evaluate` a tenth more CPU time and no wall
    # time back (docs/performance.md). One thread, as Snakemake gives a one-thread job, unless set.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from examflow.cli import program

    return program()


if __name__ == "__main__":
    raise SystemExit(run())
