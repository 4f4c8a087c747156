"""Model solution, notebook 14's build exercise: the desk's rule that no expense is booked in the future. Never copied
to participants."""
from agentlab.tools import rule


def my_rule(args, today):
    day = args.get("date")
    if isinstance(day, str) and day > today:  # ISO dates compare as text
        return [rule("date", f"{day} is after today ({today}): an expense cannot be booked in the future. "
                             "Ask the user which day it was.",
                     f"{day} 晚于今天（{today}）：不能记未来的支出。请向用户确认是哪一天。")]
    return []
