"""Model solution, notebook 13's build exercise: route each ask over the descriptions in its own language. Never copied
to participants."""
from agentlab.evals.routing_eval import desk_router
from agentlab.routing import query_lang
from agentlab.scenarios import expense

routers = {lang: desk_router(expense.make_registry(expense.Ledger(), lang=lang), keywords=False) for lang in ("en", "zh")}


def my_offer(ask):
    return routers[query_lang(ask)].offer(ask)
