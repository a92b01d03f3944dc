"""Webhooks both ways: the simulator's events verify with `stripe.Webhook.construct_event`,
and a payload signed with the library's scheme is accepted by the gateway's webhook route
(a tampered or wrongly keyed one refused)."""

import http.server
import json
import queue
import threading
import time

import requests
import stripe

from env import GATEWAY_URL, SIM_URL, WEBHOOK_SECRET, authorize, key
from shapes import assert_like_stripe


class Receiver:
    """A webhook endpoint on a free loopback port, keeping what it is sent."""

    def __init__(self):
        self.deliveries = queue.Queue()
        deliveries = self.deliveries

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                deliveries.put((self.headers.get("Stripe-Signature"), body.decode("utf-8")))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"

    def next(self, kind):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            signature, body = self.deliveries.get(timeout=max(0.1, deadline - time.monotonic()))
            if json.loads(body)["type"] == kind:
                return signature, body
        raise AssertionError(f"no {kind} event delivered")

    def close(self):
        self.server.shutdown()


def knobs(**patch):
    requests.post(f"{SIM_URL}/_sim/knobs", json=patch).raise_for_status()


def test_simulator_events_verify_with_the_library():
    receiver = Receiver()
    knobs(webhook_url=receiver.url)
    try:
        pi = authorize()
        signature, body = receiver.next("payment_intent.amount_capturable_updated")
        event = stripe.Webhook.construct_event(body, signature, WEBHOOK_SECRET)
        assert_like_stripe(event)
        assert event.data.object.id == pi.id
        stripe.PaymentIntent.capture(pi.id)
        signature, body = receiver.next("payment_intent.succeeded")
        assert stripe.Webhook.construct_event(body, signature, WEBHOOK_SECRET).data.object.status == "succeeded"
        stripe.Refund.create(payment_intent=pi.id)
        signature, body = receiver.next("charge.refunded")
        refunded = stripe.Webhook.construct_event(body, signature, WEBHOOK_SECRET)
        assert_like_stripe(refunded)
        assert refunded.data.object.refunded is True
        try:
            stripe.Webhook.construct_event(body.replace("true", "false", 1), signature, WEBHOOK_SECRET)
            raise AssertionError("a tampered event verified")
        except stripe.SignatureVerificationError:
            pass
    finally:
        knobs(webhook_url="")
        receiver.close()


def deliver(payload, signature):
    return requests.post(f"{GATEWAY_URL}/api/payments/webhook", data=payload.encode("utf-8"),
                         headers={"Stripe-Signature": signature, "Content-Type": "application/json"})


def test_the_gateway_accepts_what_the_library_signs():
    pi = authorize(key("foreign"))
    payload = json.dumps({
        "id": key("evt"), "object": "event", "type": "payment_intent.amount_capturable_updated",
        "api_version": stripe.api_version, "created": int(time.time()), "livemode": False,
        "pending_webhooks": 1, "request": {"id": None, "idempotency_key": None},
        "data": {"object": stripe.PaymentIntent.retrieve(pi.id).to_dict()},
    })
    signature = stripe.WebhookSignature.generate_signature_header(payload, WEBHOOK_SECRET)
    accepted = deliver(payload, signature)
    # The payment is no checkout of this gateway's: recorded and acknowledged.
    assert accepted.status_code == 200, (accepted.status_code, accepted.text)
    assert accepted.json()["received"] is True
    again = deliver(payload, signature)
    assert again.status_code == 200 and again.json().get("duplicate") is True, again.text

    tampered = deliver(payload.replace('"requires_capture"', '"succeeded"'), signature)
    assert tampered.status_code == 400, tampered.status_code
    assert tampered.headers["Content-Type"].startswith("application/problem+json")
    wrong_key = stripe.WebhookSignature.generate_signature_header(payload, "whsec_someone_else")
    assert deliver(payload, wrong_key).status_code == 400
    stale = stripe.WebhookSignature.generate_signature_header(payload, WEBHOOK_SECRET, int(time.time()) - 3600)
    assert deliver(payload, stale).status_code == 400
