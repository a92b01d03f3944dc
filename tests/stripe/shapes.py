"""Holds an object the library parsed to Stripe's own example object of its kind.

Every field of the example (fixtures.json, from Stripe's OpenAPI repository) must be present
with the same JSON type, recursively. A null where the example has a value is allowed only
where the library's own type annotation says the field is nullable (`Optional[...]`), so
"nullable" is Stripe's word, not ours.
"""

import json
import pathlib
import typing

import stripe

FIXTURES = json.loads((pathlib.Path(__file__).parent / "fixtures.json").read_text())["resources"]

CLASSES = {
    "payment_intent": stripe.PaymentIntent,
    "refund": stripe.Refund,
    "event": stripe.Event,
    "charge": stripe.Charge,
}


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def annotation(cls, key):
    if cls is None:
        return None
    for klass in cls.__mro__:
        found = klass.__dict__.get("__annotations__", {}).get(key)
        if found is not None:
            return found
    return None


def nullable(ann):
    return ann is not None and type(None) in typing.get_args(ann)


def nested_class(ann):
    """The StripeObject class a field's annotation names, if exactly one."""
    if ann is None:
        return None
    candidates = [ann, *typing.get_args(ann)]
    classes = [c for c in candidates if isinstance(c, type) and issubclass(c, stripe.StripeObject)]
    return classes[0] if len(classes) == 1 else None


def as_dict(obj):
    if isinstance(obj, stripe.StripeObject):
        return obj.to_dict()
    return obj


def differences(ours, example, cls, path):
    """Yields one line per field of `example` that `ours` lacks or types differently."""
    for key, want in example.items():
        where = f"{path}.{key}"
        if key not in ours:
            yield f"{where}: missing (Stripe's example has {json_type(want)})"
            continue
        got = ours[key]
        ann = annotation(cls, key)
        if got is None:
            if want is not None and not nullable(ann):
                yield f"{where}: null, but the library types it {ann!r} (not nullable)"
            continue
        if want is None:
            continue
        if json_type(got) != json_type(want):
            yield f"{where}: {json_type(got)} where Stripe's example has {json_type(want)}"
            continue
        if isinstance(want, dict):
            yield from differences(got, want, nested_class(ann), where)
        elif isinstance(want, list) and want and got and isinstance(want[0], dict):
            for i, item in enumerate(got):
                yield from differences(item, want[0], None, f"{where}[{i}]")


def assert_like_stripe(obj, kind=None):
    """Fails with every difference between `obj` and Stripe's example of its kind."""
    kind = kind or obj["object"]
    assert isinstance(obj, CLASSES[kind]), f"the library parsed a {kind} as {type(obj).__name__}"
    ours = as_dict(obj)
    example = FIXTURES[kind]
    if kind == "event":
        # The example event carries a plan; ours carry payments: compare the envelope here and
        # the object by its own kind.
        example = {k: v for k, v in example.items() if k != "data"}
        inner = obj.data.object
        assert_like_stripe(inner)
    problems = list(differences(ours, example, CLASSES[kind], kind))
    assert not problems, f"{kind} {ours.get('id')} differs from Stripe's example:\n  " + "\n  ".join(problems)
