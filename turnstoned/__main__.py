from turnstoned.cli.main import main

raise SystemExit(main())
