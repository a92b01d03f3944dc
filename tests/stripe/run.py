"""Runs every `test_*` function of this folder's `test_*.py` files against the servers named
in the environment, with Stripe's official library; exits non-zero on any failure.

Run through the Rust suite, which starts the simulator and a gateway:
    FLOODGATE_PYTHON=/path/to/venv/bin/python cargo test -p floodgate-tests --test stripe_library
"""

import importlib
import pathlib
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stripe  # noqa: E402

import env  # noqa: E402


def main():
    env.configure()
    print(f"stripe-python {stripe.VERSION}, API version {stripe.api_version}")
    failed = []
    ran = 0
    for path in sorted(HERE.glob("test_*.py")):
        module = importlib.import_module(path.stem)
        for name in sorted(n for n in dir(module) if n.startswith("test_")):
            ran += 1
            try:
                getattr(module, name)()
                print(f"ok   {path.stem}.{name}")
            except Exception:  # noqa: BLE001 - every failure is reported, then the run fails
                failed.append(f"{path.stem}.{name}")
                print(f"FAIL {path.stem}.{name}")
                traceback.print_exc()
    print(f"{ran - len(failed)} passed, {len(failed)} failed")
    if failed or ran == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
