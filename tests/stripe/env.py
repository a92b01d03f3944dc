"""The servers under test, named by the Rust test that starts them (tests/tests/stripe_library.rs)."""

import os
import uuid

import stripe


def need(name):
    value = os.environ.get(name)
    assert value, f"{name} is not set: run this suite through `cargo test -p floodgate-tests --test stripe_library`"
    return value


SIM_URL = need("STRIPE_SIM_URL")
API_KEY = need("STRIPE_SIM_KEY")
WEBHOOK_SECRET = need("STRIPE_WEBHOOK_SECRET")
GATEWAY_URL = need("FLOODGATE_GATEWAY_URL")


def configure():
    stripe.api_key = API_KEY
    stripe.api_base = SIM_URL
    # One request per call: a retry would hide the answer under test.
    stripe.max_network_retries = 0


def key(prefix="idem"):
    return f"{prefix}-{uuid.uuid4().hex}"


def authorize(attempt=None, pm="pm_card_visa", amount=4200, idempotency_key=None, **extra):
    """The gateway's own authorization, made with the library."""
    attempt = attempt or key("att")
    return stripe.PaymentIntent.create(
        amount=amount,
        currency="eur",
        payment_method=pm,
        capture_method="manual",
        confirm=True,
        metadata={"attempt_id": attempt},
        idempotency_key=idempotency_key or attempt,
        **extra,
    )
