"""`pm_card_authenticationRequired`: `requires_action` with a `redirect_to_url` next action,
and the challenge page's two outcomes, read back through the library."""

import requests
import stripe

from env import authorize
from shapes import assert_like_stripe

RETURN = "https://shop.example/checkout?hold=h_1"


def challenge(pi):
    assert pi.status == "requires_action", pi.status
    action = pi.next_action
    assert action.type == "redirect_to_url", action
    assert action.redirect_to_url.return_url == RETURN
    page = requests.get(action.redirect_to_url.url)
    assert page.status_code == 200 and "Complete authentication" in page.text, page.text
    return action.redirect_to_url.url


def test_completing_authentication_authorizes():
    pi = authorize(pm="pm_card_authenticationRequired", return_url=RETURN)
    assert_like_stripe(pi)
    url = challenge(pi)
    back = requests.post(f"{url}/complete", allow_redirects=False)
    assert back.status_code == 303, back.status_code
    location = back.headers["Location"]
    assert location.startswith(RETURN + "&payment_intent=" + pi.id), location
    assert location.endswith("redirect_status=succeeded"), location
    now = stripe.PaymentIntent.retrieve(pi.id)
    assert_like_stripe(now)
    assert now.status == "requires_capture" and now.next_action is None
    assert stripe.PaymentIntent.capture(pi.id).status == "succeeded"


def test_failing_authentication_declines():
    pi = authorize(pm="pm_card_authenticationRequired", return_url=RETURN)
    url = challenge(pi)
    back = requests.post(f"{url}/fail", allow_redirects=False)
    assert back.status_code == 303 and back.headers["Location"].endswith("redirect_status=failed")
    now = stripe.PaymentIntent.retrieve(pi.id)
    assert_like_stripe(now)
    assert now.status == "requires_payment_method"
    assert now.last_payment_error.code == "payment_intent_authentication_failure"
    # A second choice changes nothing.
    requests.post(f"{url}/complete", allow_redirects=False)
    assert stripe.PaymentIntent.retrieve(pi.id).status == "requires_payment_method"
