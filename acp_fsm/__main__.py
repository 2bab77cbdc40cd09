from acp_fsm.cli import main

raise SystemExit(main())
