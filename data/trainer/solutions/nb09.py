"""Notebook 09's build exercise, solved: a write may name only orders the user wrote or a tool returned."""
import json
import re


def my_write_check(tool_name, args, seen):
    orders = re.findall(r"A\d{4}", json.dumps(args, ensure_ascii=False))  # in any argument, a summary too
    return all(any(order in text for text in seen) for order in orders)
