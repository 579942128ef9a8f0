from examflow.cli import main

raise SystemExit(main())
