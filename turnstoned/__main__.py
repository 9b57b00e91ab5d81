from turnstoned.cli import main

raise SystemExit(main())
