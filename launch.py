"""Start RLOO Studio: prepare the environment on first run, then serve the app on http://127.0.0.1:7860/?token=....

    python launch.py [--host H] [--port P] [--auth USER:PASS] [--share] [--inbrowser] [--runs-dir DIR]
                     [--allowed-host NAME] [--no-token] [--print-url]

The app's link carries a launch token (see docs/security.md); `--print-url` prints it again.
The login may also come from the RLOO_STUDIO_AUTH environment variable (USER:PASS).

Everything after `launch.py` is passed to `rloo-studio ui`.
"""

import sys

from bootstrap import ensure_environment

if __name__ == "__main__":
    ensure_environment()
    from rloo_studio.cli import main

    sys.exit(main(["ui", *sys.argv[1:]]))
