from examflow.cli import program

raise SystemExit(program())
