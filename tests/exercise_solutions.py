"""The solutions to the notebooks' exercises, kept out of the notebooks (tests/test_notebooks.py
runs each notebook with its blanks, then fills them in from here and expects the check to pass).

Each entry replaces the blank assignments (``name = None``) of the notebook's exercise cell.
"""

SOLUTIONS = {
    "00_start_here": 'answer = "lost_reply"',
    "01_schema_contract": '''my_description = "Refund a paid order that has not shipped. Call get_order first to learn the amount."
my_schema = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "Order number, like A1001."},
        "amount": {"type": "number", "description": "Refund amount in yuan, a positive number, e.g. 199.0."},
        "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock", "price_error"],
                   "description": "user_cancel when the user changed their mind; out_of_stock; price_error."},
    },
    "required": ["order_id", "amount", "reason"],
}''',
    "02_bad_arguments": 'my_answer = "wrong_type"',
    "03_readable_errors": 'my_answer = "escalated"',
    "04_transient_validation_fatal": "my_answer = 2.0",
    "05_side_effects": 'my_answer = "create_refund:A1004"',
    "06_loops_that_never_end": "my_answer = 3",
    "07_parallel_tool_calls": "my_answer = 3",
    "08_where_failures_are_caught": 'my_answer = "structure"',
    "09_real_models": 'my_answer = "raise"',
    "10_evaluation": 'my_answer = "validate"',
    # the sample's largest class depends on the tags as a person left them: read it off the widget
    "11_badcase_review": "my_answer = max(review.counts(), key=review.counts().get)",
    "12_messages_and_context": 'my_answer = "tool"',
    "13_tool_choice_and_routing": "my_answer = 2",
    "14_expense_desk": "my_answer = 12",
    "15_skill_site": 'my_answer = "Idempotent-Replayed"',
    "16_replicas_and_mcp": 'my_answer = "_meta"',
    "17_probe_your_tools": 'my_answer = "not_caught"',
    # the 0.5B's bad_json row falls from 12 to 7 (data/bfcl/graded.json, and live from the same recording)
    "18_prevention_or_repair": 'my_answer = "bad_json"',
    "19_take_the_guards_home": 'my_answer = "secret_in_error"',
}

# The Chinese twins are solved as a Chinese learner answers: read off the Chinese tables (their glossary labels,
# data/i18n/labels/) or typed with a unit. The rest are solved as in English.
SOLUTIONS_ZH = {
    "03_readable_errors": 'my_answer = "转人工"',
    "04_transient_validation_fatal": 'my_answer = "2 秒"',
    "06_loops_that_never_end": 'my_answer = "第 3 次"',
    "07_parallel_tool_calls": 'my_answer = "3 条"',
    "08_where_failures_are_caught": 'my_answer = "结构"',
    "09_real_models": 'my_answer = "升高"',
    "10_evaluation": 'my_answer = "校验"',
    "12_messages_and_context": 'my_answer = "工具"',
    "13_tool_choice_and_routing": 'my_answer = "２ 个"',
    "14_expense_desk": 'my_answer = "12 条"',
    "17_probe_your_tools": 'my_answer = "未拦截"',
}
