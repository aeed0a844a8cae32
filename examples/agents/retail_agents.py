"""Reference agents for the retail example suite: rule-based stand-ins for a model.

No model is called: keyword rules recognise the intent, then the agent asks for the email
and zip code, verifies with what the customer said, reads the orders, applies the policy, asks
for confirmation naming every value of every change (order, item, amount, payment method,
address, size and colour), acts and closes. They let the whole instrument (episodes, grading,
statistics, reports) run offline and reproducibly, with two systems of known, different
reliability to compare.

Mistakes are seeded through ``session.rng`` (never the global ``random``): at each decision
point an agent errs with probability ``fault_rate``.

* ``careful(fault_rate=0.1)``: rarely skips verification or confirmation, picks a wrong
  candidate (item, payment method, variant, reason), or grants a forbidden request.
* ``hasty(fault_rate=0.35)``: all that more often, plus unchecked first matches and claims of
  success without acting. Usage is reported as zero: there is no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the module runs without groundstate too (in examples/agents/mcp_agent.py)
    from groundstate.agents.base import Session

Record = dict[str, Any]
Candidate = tuple[Record, Record]  # (order, item)

REFUND_WINDOW_DAYS = 30
GOODWILL_CENTS = 1000
LATE_AFTER_DAYS = 7
OPEN = ("pending", "processing")
METHOD_ID = "payment_method_id"
THIRD_PARTY = re.compile(r"\b(husband|wife|spouse|partner|son|daughter|friend|mother|father)\b")
# Checked in this order; the first intent with a keyword at the start of a word wins.
INTENTS = {
    "card": ("card number", "full number", "expiry"),
    "exchange": ("exchange", "swap"),
    "cancel": ("cancel", "remove", "take the"),
    "credit": ("to arrive", "late", "make up for"),
    "address": ("address", "moving", "sent to", "ship it to"),
    "refund": ("refund", "money back", "return"),
}
ADDRESS = re.compile(
    r"(\d+ [^,]+?)(?:, ((?:apt|suite|unit)[^,]*))?, ([A-Za-z .]+), ([A-Z]{2}) (\d{5})", re.I
)
VERIFY = "I can help with that. To verify your identity, please tell me your email and zip code."


@dataclass
class Job:
    kind: str
    text: str


@dataclass
class Plan:
    actions: list[tuple[str, str, Record]] = field(default_factory=list)  # tool, summary, args
    notes: list[str] = field(default_factory=list)

    def add(self, tool: str, summary: str, **args: Any) -> None:
        self.actions.append((tool, summary, args))


def _intent(sentence: str) -> str | None:
    text = sentence.lower()
    hits = (k for k, words in INTENTS.items() if any(re.search(rf"\b{w}", text) for w in words))
    return next(hits, None)


def parse_jobs(request: str) -> list[Job]:
    """One job per intent; sentences without an intent join the job before (or after) them."""
    jobs: list[Job] = []
    loose: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", request.strip()):
        kind = _intent(sentence)
        if kind is None:
            loose.append(sentence)
        elif jobs and jobs[-1].kind == kind:
            jobs[-1].text += " " + sentence
        else:
            jobs.append(Job(kind, " ".join([*loose, sentence])))
            loose = []
    if jobs and loose:
        jobs[-1].text += " " + " ".join(loose)
    for job in jobs:  # "I still want the hoodie" is not something to act on
        job.text = re.sub(r"\b(i still want|keep(ing)?)\b[^.;]*", "", job.text, flags=re.I)
    return jobs


def _words(text: str) -> set[str]:
    """Lower-case words, plural "s" dropped (shoes -> shoe)."""
    words = re.findall(r"[a-z]+", text.lower())
    return {w[:-1] if w.endswith("s") and len(w) > 4 else w for w in words}


def mentions(text: str, product_name: str) -> bool:
    return bool({w for w in _words(product_name) if len(w) > 3 and w != "pack"} & _words(text))


def _money(cents: int) -> str:
    return f"${cents / 100:.2f}"


def _size(size: str) -> str:
    return size if size == "one size" else f"size {size}"


def parse_address(text: str) -> Record | None:
    found = ADDRESS.search(text)
    if found is None:
        return None
    line1, line2, city, state, zip_code = found.groups()
    keys = ("line1", "line2", "city", "state", "zip_code")
    return dict(zip(keys, (line1, line2 or "", city.strip(), state.upper(), zip_code), strict=True))


@dataclass(frozen=True)
class RetailAgent:
    """A rule-based customer service agent with seeded faults."""

    fault_rate: float
    hasty: bool

    async def run(self, session: Session) -> str | None:
        session.record_usage(input_tokens=0, output_tokens=0, cost=0.0)
        return await _Conversation(session, self.fault_rate, self.hasty).run()


class _Conversation:
    """One attempt; all its state lives here, so attempts share nothing."""

    def __init__(self, session: Session, fault_rate: float, hasty: bool) -> None:
        self.session, self.fault_rate, self.hasty = session, fault_rate, hasty
        self.customer_id = ""
        self.orders: list[Record] = []

    def slip(self) -> bool:
        return self.session.rng.random() < self.fault_rate

    async def call(self, tool: str, **args: Any) -> Any:
        result = await self.session.call(tool, args)
        return result.output if result.ok else None

    async def close(self, text: str) -> str:
        await self.session.say(f"{text} Is there anything else I can help with?")
        return text

    async def run(self) -> str | None:
        request = self.session.user_request
        jobs = parse_jobs(request)
        if not jobs:
            return await self.close("I'm sorry, I could not tell what you need.")
        if jobs[0].kind == "card" and not self.slip():
            return await self.close(
                "For your security I cannot look up or read out full card numbers or expiry "
                "dates; please check the card itself or your bank statement."
            )
        if not await self.identify():
            return await self.close("I could not verify your identity, so I cannot help.")
        if THIRD_PARTY.search(request.lower()) and not self.slip():
            return await self.close(
                "I can only help with orders on your own account; the account holder will "
                "need to contact us themselves."
            )
        if jobs[0].kind == "card":  # the fault path: the database refuses this lookup
            for method in await self.payment_methods():
                await self.call("lookup_card_on_file", payment_method_id=method[METHOD_ID])
            return await self.close("I could not find the card details.")
        await self.load_orders(jobs)
        plan = Plan()
        for job in jobs:
            await getattr(self, f"plan_{job.kind}")(job, plan)
        return await self.carry_out(plan)

    async def payment_methods(self) -> list[Record]:
        profile = await self.call("get_customer", customer_id=self.customer_id) or {}
        methods: list[Record] = profile.get("payment_methods", [])
        return methods

    async def identify(self) -> bool:
        reply = await self.session.say(VERIFY) or ""
        email = re.search(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", reply)
        zip_code = re.search(r"zip code is (\d{5})", reply)
        if email is None or zip_code is None:
            return False
        if self.slip():  # fault: looks the account up instead of verifying it
            found = await self.call("find_customer_by_email", email=email.group())
        else:
            args = {"email": email.group(), "zip_code": zip_code.group(1)}
            found = await self.call("verify_identity", **args)
        self.customer_id = found["customer_id"] if found else ""
        return bool(found)

    async def load_orders(self, jobs: list[Job]) -> None:
        """Read the orders that name a product of the request (and open ones, for a move)."""
        text = " ".join(job.text for job in jobs)
        moving = any(job.kind == "address" for job in jobs)
        listing = await self.call("list_orders", customer_id=self.customer_id) or {}
        for summary in listing.get("orders", []):
            named = any(mentions(text, name) for name in summary["products"])
            if named or (moving and summary["status"] in OPEN):
                order = await self.call("get_order", order_id=summary["order_id"])
                self.orders += [order] if order else []

    def matching(self, text: str, statuses: tuple[str, ...]) -> list[Candidate]:
        return [
            (order, item)
            for order in self.orders
            for item in order["items"]
            if item["status"] in statuses and mentions(text, item["product_name"])
        ]

    def pick(self, candidates: list[Candidate]) -> Candidate | None:
        """The most recent candidate within the window (or, by fault, another one)."""
        if self.hasty and candidates and self.slip():
            return candidates[0]  # fault: the first match, unchecked
        recent = [c for c in candidates if (c[0]["days_since_delivery"] or 0) <= REFUND_WINDOW_DAYS]
        eligible = [c for c in recent if c[1]["status"] == "delivered"]
        if not eligible:
            return candidates[-1] if candidates and self.slip() else None  # fault: ignores policy
        best = max(eligible, key=lambda c: str(c[0]["delivered_at"]))
        others = [c for c in candidates if c is not best]
        return others[0] if others and self.slip() else best

    async def plan_refund(self, job: Job, plan: Plan) -> None:
        by_product: dict[str, list[Candidate]] = {}
        for order, item in self.matching(job.text, ("delivered", "refunded")):
            by_product.setdefault(item["product_id"], []).append((order, item))
        for candidates in by_product.values():
            chosen = self.pick(candidates)
            if chosen is None:
                order, item = candidates[-1]
                plan.notes.append(
                    f"The {item['product_name']} was delivered {order['days_since_delivery']} "
                    "days ago, outside our 30-day refund window, so I cannot refund it."
                )
                continue
            order, item = chosen
            method = {METHOD_ID: order[METHOD_ID], "label": order["payment_method_label"]}
            if self.slip():  # fault: another of the customer's payment methods
                others = await self.payment_methods()
                method = next((m for m in others if m[METHOD_ID] != method[METHOD_ID]), method)
            ids = {"order_id": order["order_id"], "item_id": item["item_id"]}
            summary = (
                f"refund the {item['product_name']} from order {order['order_id']} "
                f"({_money(item['price_cents'])}) to your {method['label']}"
            )
            plan.add("refund_item", summary, **ids, payment_method_id=method[METHOD_ID])

    async def plan_cancel(self, job: Job, plan: Plan) -> None:
        reasons = ("ordered_by_mistake", "no_longer_needed")
        reason = reasons[("mistake" not in job.text.lower()) ^ self.slip()]  # fault: other one
        why = f'with the reason "{reason.replace("_", " ")}"'
        by_order: dict[str, list[Record]] = {}
        for order, item in self.matching(job.text, ("ordered",)):
            by_order.setdefault(order["order_id"], []).append(item)
        for order in (o for o in self.orders if o["order_id"] in by_order):
            order_id, items = order["order_id"], by_order[order["order_id"]]
            if (status := order["status"]) != "pending" and not self.slip():
                plan.notes.append(
                    f"Order {order_id} is {status}, so it can no longer be cancelled."
                )
                continue
            whole = len(items) == sum(i["status"] == "ordered" for i in order["items"])
            if whole and self.session.rng.random() < 0.5:  # two valid routes; take either
                names = " and ".join(item["product_name"] for item in items)
                summary = f"cancel order {order_id} ({names}) {why}"
                plan.add("cancel_order", summary, order_id=order_id, reason=reason)
                continue
            for item in items:
                ids = {"order_id": order_id, "item_id": item["item_id"]}
                summary = f"cancel the {item['product_name']} from order {order_id} {why}"
                plan.add("cancel_item", summary, **ids, reason=reason)

    async def plan_address(self, job: Job, plan: Plan) -> None:
        address = parse_address(job.text)
        if address is None:
            plan.notes.append("I could not read the new address.")
            return
        shown = ", ".join(v for k, v in address.items() if v and k != "zip_code")
        shown += f" {address['zip_code']}"
        text = job.text.lower()
        if "account" in text or "default" in text:
            summary = f"change your default address to {shown}"
            plan.add("update_default_address", summary, customer_id=self.customer_id, **address)
        if not re.search(r"\b(send|sent|ship)\b", text) or "leave" in text:
            return
        open_orders = [o for o in self.orders if o["status"] in OPEN]
        named = [
            o for o in open_orders if any(mentions(text, i["product_name"]) for i in o["items"])
        ]
        targets = named or open_orders
        if len(targets) > 1 and self.slip():
            targets = targets[:-1]  # fault: forgets one order
        for order in targets:
            summary = f"ship order {order['order_id']} to {shown}"
            plan.add("update_order_address", summary, order_id=order["order_id"], **address)

    async def plan_exchange(self, job: Job, plan: Plan) -> None:
        chosen = self.pick(self.matching(job.text, ("delivered",)))
        if chosen is None:
            plan.notes.append("I could not find a delivered item within 30 days to exchange.")
            return
        order, item = chosen
        product = await self.call("get_product", product_id=item["product_id"]) or {}
        size = re.search(r"\bsize (\d+|xs|s|m|l|xl)\b", job.text, re.I)
        variants: list[Record] = product.get("variants", [])
        colours = (_words(job.text) & {v["colour"] for v in variants}) - {item["colour"]}
        want = {
            "size": size.group(1).upper() if size else item["size"],
            "colour": min(colours) if colours else item["colour"],
        }
        stocked = [v for v in variants if v["stock"] > 0 and v["variant_id"] != item["variant_id"]]
        target = next((v for v in stocked if all(v[k] == want[k] for k in want)), None)
        if target is not None and self.slip():  # fault: a neighbouring variant
            target = next((v for v in stocked if v is not target), target)
        if target is None:
            plan.notes.append("I am sorry, that variant is out of stock.")
            return
        ids = {"order_id": order["order_id"], "item_id": item["item_id"]}
        summary = (
            f"exchange the {item['product_name']} from order {order['order_id']} "
            f"({_size(item['size'])}, {item['colour']}) for {_size(target['size'])} "
            f"in {target['colour']}"
        )
        plan.add("exchange_item", summary, **ids, new_variant_id=target["variant_id"])

    async def plan_credit(self, job: Job, plan: Plan) -> None:
        delivered = [o for o, _ in self.matching(job.text, ("delivered", "refunded"))]
        if not delivered:
            plan.notes.append("I could not find that order.")
            return
        order = max(delivered, key=lambda o: str(o["delivered_at"]))
        dates = [date.fromisoformat(order[k][:10]) for k in ("placed_at", "delivered_at")]
        took = (dates[1] - dates[0]).days
        if took <= LATE_AFTER_DAYS and not self.slip():
            plan.notes.append(f"Order {order['order_id']} arrived within {took} days.")
            return
        amount = GOODWILL_CENTS * (2 if self.slip() else 1)  # fault: the wrong amount
        ids = {"customer_id": self.customer_id, "order_id": order["order_id"]}
        summary = (
            f"add a one-time goodwill store credit of {_money(amount)} for the delay of "
            f"order {order['order_id']}"
        )
        plan.add("add_store_credit", summary, **ids, amount_cents=amount, reason="late delivery")

    async def carry_out(self, plan: Plan) -> str:
        notes = " ".join(plan.notes)
        if not plan.actions:
            return await self.close(notes or "I found nothing I can change for you.")
        summary = "; ".join(summary for _, summary, _ in plan.actions)
        if not self.slip():  # fault: acts without asking
            ask = f"{notes} Here is what I will do: {summary}. Please confirm.".strip()
            if not (await self.session.say(ask) or "").startswith("Yes"):
                return await self.close("Understood, I have not changed anything.")
        if self.hasty and self.slip():  # fault: claims success without acting
            return await self.close(f"All done: I did {summary}.")
        for tool, _, args in plan.actions:
            await self.call(tool, **args)
        return await self.close(f"Done: I have made these changes: {summary}.")


def careful(fault_rate: float = 0.1) -> RetailAgent:
    """A careful agent: follows the policy, with rare seeded slips."""
    return RetailAgent(fault_rate=fault_rate, hasty=False)


def hasty(fault_rate: float = 0.35) -> RetailAgent:
    """A hasty agent: frequent slips, unchecked first matches, and claims without acting."""
    return RetailAgent(fault_rate=fault_rate, hasty=True)
