"""Model solution, notebook 18's build exercise: re-ask while the model changes its call; stop once it sends back,
unchanged, the call it was just refused (it did not read the error, and another try only costs a turn). Never copied to
participants. Stopping after the first re-ask also passes on these recordings (no second re-ask got a call that
passes), and the check says so; the rule below is the one that carries over to a model that does read its errors."""


def my_reask(refused):
    if len(refused) < 2:
        return True  # the first re-ask: every repair in the recordings came from it
    return refused[-1]["calls"] != refused[-2]["calls"]
