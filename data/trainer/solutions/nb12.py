"""Model solution, notebook 12's build exercise: a cut that never starts on an orphaned tool reply. Never copied to
participants."""


def my_cut(messages, keep):
    system, rest = messages[0], messages[1:]
    start = max(0, len(rest) - keep)
    while start < len(rest) - 1 and rest[start]["role"] == "tool":  # a reply whose call was cut off: skip it
        start += 1
    return [system, *rest[start:]]
