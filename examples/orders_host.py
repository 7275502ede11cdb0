#!/usr/bin/env python3
"""A small host co-process for examples/orders.js: serves store.listOrders, billing.invoices
and billing.refund over airlock's JSON-lines protocol (see README, `--host-process`)."""
import json
import sys

ORDERS = [
    {"id": "o-1001", "customer": "acme", "amount": 1250.00, "status": "paid"},
    {"id": "o-1002", "customer": "globex", "amount": 310.50, "status": "paid"},
    {"id": "o-1003", "customer": "acme", "amount": 99.99, "status": "refunded"},
    {"id": "o-1004", "customer": "initech", "amount": 4200.00, "status": "paid"},
    {"id": "o-1005", "customer": "globex", "amount": 75.25, "status": "pending"},
]
INVOICES = {
    "acme": [{"number": "INV-77", "due": 1250.00}],
    "globex": [{"number": "INV-78", "due": 310.50}, {"number": "INV-80", "due": 75.25}],
    "initech": [],
}


def list_orders(status=None):
    return [o for o in ORDERS if status is None or o["status"] == status]


def invoices(customer):
    if customer not in INVOICES:
        raise KeyError(f"unknown customer {customer!r}")
    return INVOICES[customer]


def refund(order_id, amount):
    """Refunds a paid order, at most its amount (examples/refund.js; in the demo airlockd makes
    it wait for an approver first). Nothing is kept: the demo's orders stay as they are."""
    order = next((o for o in ORDERS if o["id"] == order_id), None)
    if order is None or order["status"] != "paid":
        raise ValueError(f"no paid order {order_id!r}")
    if not 0 < amount <= order["amount"]:
        raise ValueError(f"cannot refund {amount} of {order['amount']}")
    return {"refund": "rf-" + order_id[2:], "order": order_id, "amount": amount}


FUNCTIONS = {"store.listOrders": list_orders, "billing.invoices": invoices,
             "billing.refund": refund}


def main():
    out = sys.stdout
    out.write(json.dumps({"functions": sorted(FUNCTIONS)}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            result = FUNCTIONS[req["function"]](*req["args"])
            answer = {"id": req["id"], "result": result}
        except Exception as exc:  # the guest sees the message as an Error
            answer = {"id": req["id"], "error": str(exc)}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
