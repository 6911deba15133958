"""Set up the environment (as launch.py does, plus test tools) and run the test suite.

    python run_tests.py [pytest arguments]      e.g. python run_tests.py -m "not slow"
    python run_tests.py --print-install-plan    which torch build this machine gets, and why (installs nothing)

The tests run offline: no model or dataset is downloaded; tiny models are built locally.
"""

import os
import sys

from bootstrap import setup_from_command_line

if __name__ == "__main__":
    args = setup_from_command_line(extras="test")
    # Offline and quiet, as the tests promise; set before anything imports huggingface_hub or gradio.
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_TELEMETRY="1", GRADIO_ANALYTICS_ENABLED="False")
    import pytest

    sys.exit(pytest.main(args or ["-q"]))
