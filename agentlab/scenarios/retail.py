"""tau-bench's retail store as an agentlab scenario: its 16 tools, written here from its
``tools.json`` (the contracts) and ``wiki.md`` (the policy), over a private copy of its data.

The dataset is not shipped: it is read from ``../shared/datasets/tau-bench/retail`` (or
``$AGENTLAB_DATASETS``). Tool errors are business errors the agent is expected to read and
work around (a wrong zip code, an order that is not pending), so they are ``INVALID_ARGS``
in the semantic stage: the model may correct itself, and the loop does not escalate.
"""
from __future__ import annotations

import ast
import copy
import json
import operator
from pathlib import Path
from typing import Any

from ..errors import ToolFailure
from ..i18n import Lang, both, t
from ..resources import datasets_dir
from ..schema import close_objects
from ..tools import Registry, Tool, rule
from .base import Scenario, in_language

__all__ = ["SCENARIO", "WRITES", "Refused", "RetailDB", "available", "data_dir", "load_db", "make_registry"]
WRITES = ("cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
          "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
          "return_delivered_order_items")


def data_dir() -> Path:
    """tau-bench's retail folder (read from the environment when asked, not at import)."""
    return datasets_dir() / "tau-bench" / "retail"


def available() -> bool:
    return (data_dir() / "tools.json").exists()


class Refused(ToolFailure):
    """A business refusal the agent can read and act on: tau-bench's "Error: ..." in English, said in Chinese too
    (``retail.refused.*`` in the catalogues). ``kind`` names the refusal; ``params`` fill its blanks."""

    def __init__(self, kind: str, /, **params: Any):
        said = {lg: t(f"retail.refused.{kind}", lg, **params) for lg in ("en", "zh")}
        super().__init__("INVALID_ARGS", {lg: t("retail.refused", lg, text=said[lg]) for lg in ("en", "zh")},
                         stage="semantic", problems=(rule("$", said["en"], said["zh"]),))
        self.kind, self.text = kind, said["en"]


_BASE_TEXT: str | None = None
_SHARED: dict | None = None  # the store's data parsed once; a RetailDB's untouched records are these very objects


def load_db() -> dict:
    """A fresh private copy of the store's data (parsing cached text beats deepcopy by far)."""
    global _BASE_TEXT
    if _BASE_TEXT is None:
        _BASE_TEXT = json.dumps({name: json.loads((data_dir() / "data" / f"{name}.json").read_text(encoding="utf-8"))
                                 for name in ("orders", "users", "products")})
    return json.loads(_BASE_TEXT)


def _shared() -> dict:
    global _SHARED
    if _SHARED is None:
        _SHARED = load_db()
    return _SHARED


class RetailDB:
    """The retail database and the 16 tools over it.

    Without a ``db`` of its own, a store starts from the shared data and copies a user or an order the first time a
    tool looks it up (``_user``, ``_order``, ``_product``: every write reaches what it changes through them, and
    every record a tool hands out is one of them). A whole private copy cost 40 ms a store, most of a replayed task (the tests replay 115 tasks 600 times);
    a record's copy costs tens of microseconds. ``tests/test_retail.py`` checks that no task's writes reach the
    shared data."""

    def __init__(self, db: dict | None = None):
        if db is None:
            self.db = {name: dict(table) for name, table in _shared().items()}  # the tables are its own, not the records
            self._own: set[tuple[str, str]] | None = set()
        else:
            self.db, self._own = db, None  # a caller's own data: every record is this store's already

    def _mine(self, table: str, key: str) -> dict:
        record = self.db[table][key]
        if self._own is not None and (table, key) not in self._own:
            self._own.add((table, key))
            record = self.db[table][key] = copy.deepcopy(record)
        return record

    # --- lookups ------------------------------------------------------------------------
    def _user(self, user_id: str) -> dict:
        if user_id not in self.db["users"]:
            raise Refused("user_not_found")
        return self._mine("users", user_id)

    def _order(self, order_id: str) -> dict:
        if order_id not in self.db["orders"]:
            raise Refused("order_not_found")
        return self._mine("orders", order_id)

    def _order_in(self, order_id: str, status: str, refusal: str) -> dict:
        """The order, if it is in ``status`` (the wiki: check the status before acting)."""
        order = self._order(order_id)
        if order["status"] != status:
            raise Refused(refusal)
        return order

    def _product(self, product_id: str) -> dict:
        if product_id not in self.db["products"]:
            raise Refused("product_not_found")
        return self._mine("products", product_id)  # handed out: the caller's to keep, never the shared record

    def _variant(self, item_id: str) -> tuple[dict, dict]:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                return product, product["variants"][item_id]
        raise Refused("new_item_not_found")

    def _payment(self, user: dict, payment_method_id: str) -> dict:
        if payment_method_id not in user["payment_methods"]:
            raise Refused("payment_not_found")
        return user["payment_methods"][payment_method_id]

    # --- read tools -----------------------------------------------------------------------
    def calculate(self, expression: str) -> str:
        return _calculate(expression)

    def find_user_id_by_email(self, email: str) -> str:
        for uid, u in self.db["users"].items():
            if u["email"].lower() == email.lower():
                return uid
        raise Refused("user_not_found")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for uid, u in self.db["users"].items():
            if (u["name"]["first_name"].lower() == first_name.lower()
                    and u["name"]["last_name"].lower() == last_name.lower() and u["address"]["zip"] == zip):
                return uid
        raise Refused("user_not_found")

    def get_order_details(self, order_id: str) -> dict:
        return self._order(order_id)

    def get_product_details(self, product_id: str) -> dict:
        return self._product(product_id)

    def get_user_details(self, user_id: str) -> dict:
        return self._user(user_id)

    def list_all_product_types(self) -> dict:
        return dict(sorted((p["name"], pid) for pid, p in self.db["products"].items()))

    def think(self, thought: str) -> str:
        return ""

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    # --- write tools ------------------------------------------------------------------------
    def cancel_pending_order(self, order_id: str, reason: str) -> dict:
        order = self._order_in(order_id, "pending", "not_pending_cancel")
        if reason not in ("no longer needed", "ordered by mistake"):
            raise Refused("invalid_reason")
        user = self._user(order["user_id"])
        refunds = []
        for p in order["payment_history"]:
            refunds.append({"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]})
            method = user["payment_methods"].get(p["payment_method_id"], {})
            if method.get("source") == "gift_card":
                method["balance"] = round(method["balance"] + p["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    def modify_pending_order_address(self, order_id: str, address1: str, address2: str, city: str, state: str,
                                     country: str, zip: str) -> dict:
        order = self._order_in(order_id, "pending", "not_pending_modify")
        order["address"] = {"address1": address1, "address2": address2, "city": city, "state": state,
                            "country": country, "zip": zip}
        return order

    def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str,
                            country: str, zip: str) -> dict:
        user = self._user(user_id)
        user["address"] = {"address1": address1, "address2": address2, "city": city, "state": state,
                           "country": country, "zip": zip}
        return user

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict:
        order = self._order_in(order_id, "pending", "not_pending_modify")
        user = self._user(order["user_id"])
        new = self._payment(user, payment_method_id)
        history = order["payment_history"]
        if len(history) > 1 or history[0]["transaction_type"] != "payment":
            raise Refused("one_payment")
        old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
        if old_id == payment_method_id:
            raise Refused("same_payment")
        if new["source"] == "gift_card" and new["balance"] < amount:
            raise Refused("gift_card_order")
        history.append({"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id})
        history.append({"transaction_type": "refund", "amount": amount, "payment_method_id": old_id})
        if new["source"] == "gift_card":
            new["balance"] = round(new["balance"] - amount, 2)
        old = user["payment_methods"].get(old_id, {})
        if old.get("source") == "gift_card":
            old["balance"] = round(old["balance"] + amount, 2)
        return order

    def _swap(self, order: dict, item_ids: list[str], new_item_ids: list[str],
              payment_method_id: str) -> tuple[list[dict], float, dict]:
        """The order's items that change, the price difference (new minus old), and the payment
        method that settles it (a gift card must cover the difference)."""
        pool = list(order["items"])
        olds = []
        for item_id in item_ids:
            match = next((it for it in pool if it["item_id"] == item_id), None)
            if match is None:
                raise Refused("item_not_found", item=item_id)
            pool.remove(match)
            olds.append(match)
        if len(item_ids) != len(new_item_ids):
            raise Refused("count_mismatch")
        diff = 0.0
        for old, new_id in zip(olds, new_item_ids, strict=False):
            product = self.db["products"].get(old["product_id"], {})
            variant = product.get("variants", {}).get(new_id)
            if variant is None or not variant.get("available"):
                raise Refused("new_item_unavailable", item=new_id)
            diff += variant["price"] - old["price"]
        method = self._payment(self._user(order["user_id"]), payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise Refused("gift_card_difference")
        return olds, diff, method

    def modify_pending_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> dict:
        order = self._order_in(order_id, "pending", "not_pending_modify")
        olds, diff, method = self._swap(order, item_ids, new_item_ids, payment_method_id)
        order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                         "amount": abs(diff), "payment_method_id": payment_method_id})
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - diff, 2)
        for old, new_id in zip(olds, new_item_ids, strict=False):
            variant = self._product(old["product_id"])["variants"][new_id]  # the store's own: its options go into the order
            old["item_id"], old["price"], old["options"] = new_id, variant["price"], variant["options"]
        order["status"] = "pending (item modified)"
        return order

    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict:
        order = self._order_in(order_id, "delivered", "not_delivered_return")
        user = self._user(order["user_id"])
        method = self._payment(user, payment_method_id)
        if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise Refused("original_or_gift_card")
        pool = [it["item_id"] for it in order["items"]]
        for item_id in item_ids:
            if item_id not in pool:
                raise Refused("some_item_not_found")
            pool.remove(item_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order

    def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                       payment_method_id: str) -> dict:
        order = self._order_in(order_id, "delivered", "not_delivered_exchange")
        _, diff, _ = self._swap(order, item_ids, new_item_ids, payment_method_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = round(diff, 2)
        return order


_OPS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


def _calculate(expression: str) -> str:
    """Arithmetic only (numbers, + - * /, parentheses): never ``eval``."""
    if any(ch not in "0123456789+-*/(). " for ch in expression):
        raise Refused("bad_characters")

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise Refused("invalid_expression")

    try:
        return str(round(float(ev(ast.parse(expression, mode="eval"))), 2))
    except (SyntaxError, ZeroDivisionError) as exc:
        raise Refused("invalid_expression_kind", kind=type(exc).__name__) from None


def make_registry(store: RetailDB, *, lang: Lang = "en", **_: Any) -> Registry:
    """The 16 tools, with tau-bench's schemas closed to unknown fields; in Chinese, described in Chinese
    (``data/retail_tools.zh.json``), as the other desks' tools are."""
    specs = {s["function"]["name"]: s["function"]
             for s in json.loads((data_dir() / "tools.json").read_text(encoding="utf-8"))}
    tools = [Tool(name, fn["description"], close_objects(fn["parameters"]), getattr(store, name),
                  side_effect=name in WRITES)
             for name, fn in in_language(specs, "retail", lang).items()]
    return Registry(tools, lang=lang)


def diff(before: Any, after: Any, path: str = "") -> dict[str, list]:
    """Changed leaves as ``{"/orders/#W1/status": [old, new]}``; lists compare whole."""
    if before == after:  # one fast comparison skips the thousands of untouched records
        return {}
    if isinstance(before, dict) and isinstance(after, dict):
        out: dict[str, list] = {}
        for k in before.keys() | after.keys():
            b, a = before.get(k), after.get(k)
            if b is not a and b != a:  # an untouched record is skipped here, with no call and no path made for it
                out.update(diff(b, a, f"{path}/{k}"))
        return out
    return {} if before == after else {path: [before, after]}


SCENARIO = Scenario(
    name="retail",
    title=both("desk.retail.tau_bench_retail_store"),
    system_prompt=both("desk.retail.you_are_a_retail"),
    make_state=RetailDB,
    make_registry=make_registry,
    snapshot=lambda store: json.loads(json.dumps(store.db)),  # a copy: the records a store has not changed are shared
)
