"""Start RLOO Studio: prepare the environment on first run, then serve the app on http://127.0.0.1:7860/?token=....

    python launch.py [--host H] [--port P] [--auth-file FILE] [--share] [--inbrowser] [--runs-dir DIR]
                     [--allowed-host NAME] [--no-token] [--print-url]
    python launch.py --print-install-plan        which torch build this machine gets, and why (installs nothing)
    python launch.py --torch-index URL ...       install torch from this index instead (or RLOO_TORCH_INDEX_URL)

The app's link carries a launch token (see docs/security.md); `--print-url` prints it again.
A login (needed beyond 127.0.0.1) comes from the RLOO_STUDIO_AUTH environment variable (USER:PASS) or
from --auth-file FILE (chmod 600), never from the command line, which `ps` shows to every user.

Everything else after `launch.py` is passed to `rloo-studio ui`.
"""

import sys

from bootstrap import setup_from_command_line

if __name__ == "__main__":
    args = setup_from_command_line()
    from rloo_studio.cli import main

    sys.exit(main(["ui", *args]))
