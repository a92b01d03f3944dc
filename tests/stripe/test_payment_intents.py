"""The PaymentIntents and Refunds calls the gateway makes, made by Stripe's library."""

import requests
import stripe

from env import SIM_URL, authorize, key
from shapes import assert_like_stripe


def test_create_confirm_manual_capture():
    attempt = key("att")
    pi = authorize(attempt, payment_method_types=["card"])
    assert_like_stripe(pi)
    assert pi.status == "requires_capture", pi.status
    assert pi.capture_method == "manual"
    assert pi.amount_capturable == 4200 and pi.amount_received == 0
    # Nested form fields (`metadata[attempt_id]`, `payment_method_types[0]`) reached the
    # simulator as Stripe reads them.
    assert pi.metadata["attempt_id"] == attempt
    assert pi.payment_method_types == ["card"]
    assert pi.last_response.headers["Stripe-Version"] == stripe.api_version
    assert pi.last_response.request_id.startswith("req_")
    assert "Idempotent-Replayed" not in pi.last_response.headers


def test_retrieve_and_search_by_metadata():
    attempt = key("att")
    pi = authorize(attempt)
    again = stripe.PaymentIntent.retrieve(pi.id)
    assert_like_stripe(again)
    assert again.id == pi.id and again.status == "requires_capture"
    found = stripe.PaymentIntent.search(query=f"metadata['attempt_id']:'{attempt}'")
    assert isinstance(found, stripe.SearchResultObject), type(found)
    assert [p.id for p in found.data] == [pi.id]
    assert_like_stripe(found.data[0])
    none = stripe.PaymentIntent.search(query="metadata['attempt_id']:'never-made'")
    assert list(none.data) == [] and none.has_more is False


def test_capture_then_refund_once():
    pi = authorize()
    captured = stripe.PaymentIntent.capture(pi.id)
    assert_like_stripe(captured)
    assert captured.status == "succeeded" and captured.amount_received == 4200
    refund_key = key("refund")
    refund = stripe.Refund.create(payment_intent=pi.id, idempotency_key=refund_key)
    assert_like_stripe(refund)
    assert refund.status == "succeeded" and refund.payment_intent == pi.id and refund.amount == 4200
    replay = stripe.Refund.create(payment_intent=pi.id, idempotency_key=refund_key)
    assert replay.id == refund.id
    assert replay.last_response.headers.get("Idempotent-Replayed") == "true"
    try:
        stripe.Refund.create(payment_intent=pi.id, idempotency_key=key("refund"))
        raise AssertionError("a second refund was accepted")
    except stripe.InvalidRequestError as e:
        assert e.http_status == 400 and e.code == "charge_already_refunded", (e.http_status, e.code)


def test_cancel_voids_an_authorization():
    pi = authorize()
    canceled = stripe.PaymentIntent.cancel(pi.id, cancellation_reason="abandoned")
    assert_like_stripe(canceled)
    assert canceled.status == "canceled" and canceled.cancellation_reason == "abandoned"
    assert isinstance(canceled.canceled_at, int)
    try:
        stripe.PaymentIntent.capture(pi.id)
        raise AssertionError("a canceled payment was captured")
    except stripe.InvalidRequestError as e:
        assert e.code == "payment_intent_unexpected_state", e.code
        assert e.error.payment_intent.status == "canceled"


def test_idempotency_as_stripe_does_it():
    attempt = key("att")
    first = authorize(attempt)
    again = authorize(attempt)
    assert again.id == first.id
    assert again.last_response.headers.get("Idempotent-Replayed") == "true"
    try:
        authorize(attempt, amount=4300)
        raise AssertionError("the same key with other parameters was accepted")
    except stripe.IdempotencyError as e:
        assert e.http_status == 400, e.http_status
        assert e.error.type == "idempotency_error", e.error
        assert attempt in e.user_message


def test_decline_is_a_402_card_error_carrying_the_intent():
    attempt = key("att")
    try:
        authorize(attempt, pm="pm_card_declined")
        raise AssertionError("a declined card authorized")
    except stripe.CardError as e:
        assert e.http_status == 402, e.http_status
        assert e.code == "card_declined" and e.error.decline_code == "generic_decline"
        assert e.error.type == "card_error" and e.user_message
        intent = e.error.payment_intent
        assert_like_stripe(intent)
        assert intent.status == "requires_payment_method"
        assert intent.last_payment_error.code == "card_declined"
        assert intent.metadata["attempt_id"] == attempt


def test_error_objects_name_type_code_message_and_param():
    for params, param, code in [
        ({"currency": "eur", "payment_method": "pm_card_visa", "capture_method": "manual", "confirm": True}, "amount", "parameter_missing"),
        ({"amount": "ten", "currency": "eur"}, "amount", "parameter_invalid_integer"),
        ({"amount": 100, "currency": "eur", "capture_method": "manual", "confirm": True,
          "payment_method": "pm_card_visa", "colour": "blue"}, "colour", "parameter_unknown"),
    ]:
        try:
            stripe.PaymentIntent.create(**params)
            raise AssertionError(f"{params} accepted")
        except stripe.InvalidRequestError as e:
            assert e.http_status == 400
            assert (e.error.type, e.code, e.param) == ("invalid_request_error", code, param), (e.error.type, e.code, e.param)
            assert e.user_message
    try:
        stripe.PaymentIntent.retrieve("pi_never_made")
        raise AssertionError("an unknown payment was found")
    except stripe.InvalidRequestError as e:
        assert e.http_status == 404 and e.code == "resource_missing", (e.http_status, e.code)
    try:
        stripe.PaymentIntent.retrieve("pi_any", api_key="sk_test_wrong")
        raise AssertionError("a wrong API key was accepted")
    except stripe.AuthenticationError as e:
        assert e.http_status == 401


def test_the_simulator_speaks_the_librarys_api_version():
    answer = requests.get(f"{SIM_URL}/v1/payment_intents/search", params={"query": "metadata['attempt_id']:'x'"},
                          headers={"Authorization": f"Bearer {stripe.api_key}", "Stripe-Version": "2019-01-01"})
    assert answer.status_code == 400, answer.status_code
    assert answer.json()["error"]["type"] == "invalid_request_error"
