"""Redaction at the model boundary: bounded in time, thorough on credentials, gentle on prose.

Three properties, each a fault that once reached a model:

* rendering never freezes on a hostile string the model wrote (nothing hangs here; the time and its
  linear growth are measured by benchmarks/bench_redaction.py);
* credentials are removed from everything the model reads, returned data included;
* a sentence a tool author wrote on purpose reaches the model byte for byte.
"""
import json

import pytest
from conftest import ROOT

from agentlab import Registry, Tool, rule
from agentlab import errors as E
from agentlab.errors import Problem, ToolFailure, make_error, redact, render
from agentlab.redaction import find_secrets, redact_secrets

# --- 1. time: every rendering path on hostile strings -----------------------------------
SHAPES = {
    "dots": "a.", "ats": "a@", "sql": "SELECT FROM ", "scheme": "://", "slashes": "/a", "spaces": " ",
    "mixed_ws": " \t\n", "newlines": "\n", "digit_dots": "1.", "digits": "1", "hyphens": "a-",
    "url_like": "a://a:", "userinfo": "a:b@", "keyword": "password: ", "token_eq": "token=", "bearer": "Bearer ",
    "jwt": "eyJa.", "sk": "sk-a", "frame": 'File "a", line 1\n', "host": "a.internal.", "cjk": "密码是",
    "key_block": "-----BEGIN RSA PRIVATE KEY-----", "backslashes": "C:\\a\\", "plain": "a",
    "kept_keys": "token -", "key_chain": "a_token:", "is_chain": "password is ", "zh_keys": "令牌 ",
    "cookie": "Cookie: a=", "cookie_kept": "cookie: ", "signature": "?sig=&", "amz": "X-Amz-Signature=",
    "phrase_kept": "passphrase is the ", "phrase_label": "passphrase: too ", "camel": "dbPassword",
    "glued": "PGPASSWORD", "pass_label": "pass: ", "pass_spaces": "pass  ", "camel_chain": "aToken:",
}
SIZES = {"1KB": 1 << 10, "64KB": 1 << 16, "1MB": 1 << 20}


def hostile(shape: str, size: int) -> str:
    unit = SHAPES[shape]
    return (unit * (size // len(unit) + 1))[:size]


@pytest.fixture(scope="module")
def reg():
    return Registry.from_json(ROOT / "data" / "aftersales_tools.json")


def render_everything(reg: Registry, text: str) -> list[str]:
    """Every way a model-controlled or exception string reaches render()."""
    out = []
    got = make_error("INVALID_ARGS", problems=[
        Problem("order_id", "bad_format", expected="pattern ^A\\d{4}$", got=text),
        Problem("order_id", "not_in_enum", got=text, allowed=("a", "b")),
        Problem("amount", "wrong_type", expected="number", got=text),
        Problem("items", "wrong_type", expected="string", got=[text, {"k": text}]),
        Problem("amount", "rule", detail={"en": text, "zh": text}),
    ])
    out += [render(got, "en"), render(got, "zh")]
    out.append(reg.check("get_order", {"order_id": text}).render())  # the value echoed as got
    out.append(reg.check("get_order", {text: "A1001"}).render())  # an unknown field named by the model
    out += [render(reg.unknown_tool(text), lg) for lg in ("en", "zh")]
    out.append(reg.check(text, "{}").render())
    failure = ToolFailure("NOT_FOUND", {"en": text, "zh": text}, hint=text)
    out += [render(failure.error, "en"), render(failure.error, "zh")]
    out.append(render(make_error("MODEL_ERROR", detail=text)))
    out.append(render(None, data={"rows": [{"text": text, "n": 1}]}))  # returned data: never cut, still linear
    return out


# How fast, and whether it grows linearly, is measured by benchmarks/bench_redaction.py (a megabyte well under a
# second, 16x the input at most ~50x the time), never asserted here: a timing assertion fails on a busy machine and
# passes a regression on a fast one. What the tests hold is that nothing hangs: pytest-timeout ends a test whose
# rendering went quadratic (a megabyte squared does not finish in minutes), and the output stays short.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_rendering_hostile_strings_never_hangs_and_stays_short(reg, shape):
    for size in SIZES.values():
        text = hostile(shape, size)
        rendered = render_everything(reg, text)
        for out in rendered[:-1]:  # the last one is returned data: never cut
            assert len(out) < 20_000, (shape, size, out[:200])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["redact", "redact_secrets"])
def test_redaction_itself_never_hangs(name):
    """redact() is public and the loop runs it on telemetry: uncut, a megabyte of any shape finishes."""
    fn = getattr(E, name)
    for shape in SHAPES:
        text = hostile(shape, SIZES["1MB"])
        assert isinstance(fn(text), str)


@pytest.mark.timeout(60)
def test_suggestion_on_a_huge_name_finishes(reg):
    from agentlab.names import suggest
    name = "refund_order" * 100_000
    assert suggest(name, reg.names) in (None, *reg.names)  # cut before difflib, which is quadratic
    assert suggest(name, ["order_id", "amount"]) in (None, "order_id", "amount")


# --- 2. credentials never reach the model ---------------------------------------------
# (text, [fragments that must not survive]). Fake, but in the real formats.
SECRETS = [
    ("api_key=sk-live-abc123", ["sk-live", "abc123"]),
    ("postgresql://admin:s3cret@10.0.0.5:5432/orders", ["s3cret", "admin:"]),
    ("mysql://root:hunter2@db.internal/shop is down", ["hunter2", "root:"]),
    ("redis://:p4ssw0rd@cache:6379/0", ["p4ssw0rd"]),
    ("see https://deploy:ghp_x1y2z3@github.com/acme/app.git", ["ghp_x1y2z3", "deploy:"]),
    ("key sk-proj-4fJ9kLmN2pQrS8tUvW1xYz0aBcDeFgHi in use", ["4fJ9kLmN2pQrS8tU"]),
    ("stripe sk_live_51HxYzAbCdEfGhIjKlMnOpQr", ["51HxYzAbCdEfGhIj"]),
    ("publishable pk_live_51HxYzAbCdEfGhIjKlMnOpQr", ["51HxYzAbCdEfGhIj"]),
    ("restricted rk_live_51HxYzAbCdEfGhIjKlMnOpQr", ["51HxYzAbCdEfGhIj"]),
    ("test key sk_test_4eC39HqLyjWDarjtT1zdp7dc", ["4eC39HqLyjWDarjtT1zdp7dc"]),
    ("aws AKIAIOSFODNN7EXAMPLE with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI"]),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
    ("session ASIAY34FZKBOKMUTVV7A expired", ["ASIAY34FZKBOKMUTVV7A"]),
    ("token ghp_1234567890abcdefghijklmnopqrstuvwxyz leaked", ["ghp_1234567890abcdef"]),
    ("oauth gho_16C7e42F292c6912E7710c838347Ae178B4a", ["gho_16C7e42F292c"]),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV", ["github_pat_11ABC"]),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", ["xoxb-1234", "AbCdEfGhIjKl"]),
    ("user token xoxp-123456789012-123456789012-123456789012-abcdef1234567890", ["xoxp-1234", "abcdef1234567890"]),
    ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     ["eyJhbGciOiJIUzI1Ni", "eyJzdWIiOiIx", "dozjgNryP4J3"]),
    ("Authorization: Bearer abcdef1234567890", ["abcdef1234567890"]),
    ("Authorization: Bearer eyJhbGciOi.abc.def", ["eyJhbGciOi"]),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", ["dXNlcjpwYXNzd29yZA"]),
    ("the password is hunter2", ["hunter2"]),
    ("the password is correcthorsebatterystaple", ["correcthorse"]),
    ("Password: Tr0ub4dor&3", ["Tr0ub4dor"]),
    ("PASSWORD=letmein123;UID=sa", ["letmein123"]),
    ("connect with pwd=Zx9!kk2 and retry", ["Zx9!kk2"]),
    ("passphrase: purple-monkey-dishwasher", ["purple-monkey"]),
    ('config {"password": "hunter2", "user": "ops"}', ["hunter2"]),
    ("{'api_key': 'AIzaSyA-1234567890abcdefghijklmnopqrstu'}", ["AIzaSyA-1234567890"]),
    ("token=abc123def456", ["abc123def456"]),
    ("DB_PASSWORD=hunter2 REDIS_URL=redis://cache:6379", ["hunter2"]),
    ("export GITHUB_TOKEN=abc123def456", ["abc123def456"]),
    ("access_token: ya29.a0AfH6SMBx1234567890", ["ya29.a0AfH6SMB"]),
    ("client_secret=Q8a7b6c5d4e3f2g1h0", ["Q8a7b6c5d4e3"]),
    ("webhook secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ["MfKQ9r8GKYqr"]),
    ("Use the API key AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", ["AIzaSyDdI0hCZtE6"]),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----", ["MIIEowIBAAKCAQEA7x"]),
    ("密码是abc12345", ["abc12345"]),
    ("密码：Qwerty!23", ["Qwerty!23"]),
    ("您的密码为 Passw0rd，请妥善保管。", ["Passw0rd"]),
    ("数据库连接 postgresql://admin:s3cret@10.0.0.5:5432/orders 失败", ["s3cret"]),
    ("令牌：ghp_abcdefghijklmnopqrstuvwxyz0123456789 已泄露", ["ghp_abcdefghijkl"]),
    ("密钥是 sk-live-abcdefghijklmnop，请勿外传", ["sk-live", "abcdefghijklmnop"]),
    ("接口令牌=abc123def456xyz", ["abc123def456xyz"]),
    ("请使用 Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig 访问", ["eyJhbGciOiJIUzI1NiJ9"]),
    ("口令：hunter2", ["hunter2"]),
    # second round (an attacker's review): glued and camelCase names, environment pairs,
    # cookies, presigned URLs, and passphrases made of ordinary words
    ('{"dbPassword": "hunter2"}', ["hunter2"]),
    ('{"stripeSecret": "rk9wQ2x"}', ["rk9wQ2x"]),
    ('{"githubToken": "abcdef"}', ["abcdef"]),
    ('{"db_pass": "hunter2"}', ["hunter2"]),
    ("PGPASSWORD=hunter2 psql -h db", ["hunter2"]),
    ("DB_PASS=hunter2", ["hunter2"]),
    ("MYSQL_PWD=Zq mysql", ["Zq"]),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
    ("AWS_SECRET_ACCESS_KEY=abcdefgh", ["abcdefgh"]),
    ("pass: hunter2", ["hunter2"]),
    ("Cookie: sessionid=abc123xyz; csrftoken=q9w8e7", ["abc123xyz", "q9w8e7"]),
    ("Set-Cookie: sessionid=abc123xyz; Path=/; HttpOnly", ["abc123xyz"]),
    ("https://b.s3.amazonaws.com/f.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0a1b2c3d4e5f67890",
     ["0a1b2c3d4e5f67890"]),
    ("X-Amz-Signature=0a1b2c3d4e5f67890", ["0a1b2c3d4e5f67890"]),
    ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=AbCd%2BEf123%3D", ["AbCd%2BEf123"]),
    ("https://cdn.example.com/f?expires=1700000000&signature=9f8e7d6c5b4a", ["9f8e7d6c5b4a"]),
    ("passphrase: correct horse battery staple", ["correct horse", "horse battery", "staple"]),
    ("the passphrase is purple monkey dishwasher.", ["purple", "monkey dishwasher"]),
]


def _assert_clean(text: str, fragments: list[str], where: str) -> None:
    for fragment in fragments:
        assert fragment not in text, (where, fragment, text)


@pytest.mark.parametrize("text,fragments", SECRETS, ids=[s[0][:30] for s in SECRETS])
def test_credentials_are_removed_everywhere(text, fragments):
    _assert_clean(E.redact_secrets(text), fragments, "redact_secrets")
    _assert_clean(redact(text), fragments, "redact")
    data = {"note": text, "rows": [{"detail": text, "tags": [text]}], text: 1, "n": 3}
    rendered = render(None, data=data)
    _assert_clean(rendered, fragments, "data")
    assert json.loads(rendered)["data"]["n"] == 3  # the rest of the data is untouched
    failure = ToolFailure("NOT_FOUND", {"en": text, "zh": text}, hint={"en": text, "zh": text})
    for lang in ("en", "zh"):
        _assert_clean(render(failure.error, lang), fragments, "message/hint")
        err = make_error("INVALID_ARGS", problems=[rule("amount", text, text)])
        _assert_clean(render(err, lang), fragments, "rule")


def test_short_environment_values_are_removed():
    assert E.redact_secrets("MYSQL_PWD=x") == "MYSQL_PWD=[secret removed]"
    assert E.redact_secrets("token=x") == "token=[secret removed]"


# a field named like a credential loses its value whatever its shape (the whole value)
SECRET_FIELDS = [
    {"dbPassword": "hunter2"}, {"stripeSecret": "rk9wQ2x"}, {"githubToken": "abcdef"}, {"db_pass": "hunter2"},
    {"DB_PASSWORD": "hunter2"}, {"pgpassword": "hunter2"}, {"X-Api-Key": "abcdef"}, {"apiKey": "abcdef"},
    {"password": ["hunter2"]}, {"password": {"value": "hunter2"}}, {"password": 123456.0}, {"token": [123456]},
    {"passphrase": "correct horse battery staple"}, {"Cookie": "sessionid=abc123"}, {"set-cookie": "sid=abc123"},
    {"headers": {"Authorization": "Basic abc123"}}, {"session_id": "abc123"},
]


@pytest.mark.parametrize("data", SECRET_FIELDS, ids=[next(iter(d)) for d in SECRET_FIELDS])
def test_secret_named_fields_lose_any_value(data):
    out = render(None, data={"rows": [data], "n": 1})
    for leak in ("hunter2", "rk9wQ2x", "abcdef", "123456", "horse", "abc123"):
        assert leak not in out, out
    assert json.loads(out)["data"]["n"] == 1


def test_fields_that_only_look_like_credentials_keep_their_values():
    data = {"max_tokens": 512, "password_policy": "8 characters", "bypass": "cache", "compass": "north",
            "token_count": 3, "passed": 3, "keyboard": "us", "monkey": "George", "secretary": "Jane",
            "password": None, "token": True, "api_key": "", "prompt_tokens": 7}
    assert json.loads(render(None, data=data))["data"] == data


def test_credentials_in_urls_keep_the_scheme_and_host():
    out = E.redact_secrets("postgresql://admin:s3cret@10.0.0.5:5432/orders")
    assert out.startswith("postgresql://") and "10.0.0.5:5432/orders" in out and "s3cret" not in out


def test_secret_named_fields_in_data_are_removed():
    data = {"user": "ops", "password": "hunter2", "db": {"api_key": "abc", "token": 123456, "max_tokens": 512}}
    out = json.loads(render(None, data=data))["data"]
    assert out["user"] == "ops" and out["db"]["max_tokens"] == 512
    assert "hunter2" not in json.dumps(out) and "abc" not in json.dumps(out) and "123456" not in json.dumps(out)


def test_tool_failure_keeps_no_stack_trace_or_password():
    text = ("could not query postgresql://svc_refund:S3cr3t!@db-prod.internal:5432/orders\n"
            "Traceback (most recent call last):\n  File \"/srv/desk/repo.py\", line 88, in fetch\n"
            "    cur.execute(\"SELECT 1\")\npsycopg.OperationalError: timeout")
    out = render(ToolFailure("UNAVAILABLE", text).error)
    for leak in ("S3cr3t", "svc_refund", "Traceback", "repo.py", "OperationalError"):
        assert leak not in out, leak


# --- 3. what an author wrote on purpose is left alone -------------------------------------
BENIGN = [
    "Please update the shipping address from the order page.",
    "Select a size from the list before adding the item to your cart.",
    "Update your order from the account page.",
    "The token expired; ask the user to sign in again.",
    "the token: expired",
    "Delete from cart the items that are out of stock.",
    "Pick a colour and/or a size.",
    "Deliveries arrive between 10:30 and 12:00.",
    "This needs app version 1.2.3 or later.",
    "The total is 1,299.00 yuan including tax.",
    "Create a return label, then drop the parcel at the post office.",
    "Insert the gift card code into the payment form, then select Pay.",
    "Set the delivery date, then update the order.",
    "Orders placed after 18:00 ship the next day.",
    "Use the format YYYY-MM-DD, for example 2024-05-01.",
    "The password is incorrect; ask the user to reset it.",
    "Your password must be at least 8 characters long.",
    "The password is too short.",
    "Refunds go back to the original card within 3-5 working days.",
    "Call 400-820-8820 or write to the help desk.",
    "Sizes S/M/L are in stock; XL ships from the central warehouse.",
    "The order A1001 was shipped on 2024-03-02 at 09:15.",
    "Drop the old address from the profile, then create a new one.",
    "Bearer of this voucher gets 10% off.",
    "The secret to a good fit is the size chart.",
    "Read the returns page under Help/Returns in the app menu.",
    "Ask the user: is the address correct?",
    "Alter the quantity where the basket shows it.",
    "Version 2.0.1 changed the return window from 7 to 14 days.",
    "Room 3.14, Building 2, 100 Century Avenue, Shanghai 200120.",
    "The Basic plan-2024 subscription renews monthly.",
    "Column pk_order_items_id is the primary key of the order items.",
    "Credentials are checked by the bank, not by us.",
    "请从订单页面更新收货地址。",
    "请从列表中选择尺码。",
    "令牌已过期，请重新登录。",
    "密码错误，请让用户重置密码。",
    "密码至少 8 位。",
    "请从购物车删除缺货商品。",
    "配送时间为 10:30 至 12:00。",
    "需要 1.2.3 或更高版本的应用。",
    "总价为 1,299.00 元（含税）。",
    "订单 A1001 已于 2024-03-02 发货。",
    "可以选择颜色和/或尺码。",
    "退款将在 3-5 个工作日内退回原卡。",
    "收货地址：上海市浦东新区世纪大道 100 号 3 楼。",
    "客服热线：400-820-8820。",
    "the password field is required",
    "Reset the password in Settings",
    "the token has expired",
    "pass the salt",
    "Pass the order id as a string.",
    "The passphrase is too short.",
    "Passphrase: the one you chose when you signed up.",
    "passphrase: required",
    "Cookies keep the basket between visits.",
    "Sign the form and add your signature at the bottom.",
    "Boarding passes are sent by e-mail.",
    "The session id is shown on the receipt.",
    "Tokens used: 512 of 4096.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_authored_text_is_untouched(text):
    assert E.redact_secrets(text) == text
    failure = ToolFailure("NOT_FOUND", {"en": text, "zh": text}, hint={"en": text, "zh": text})
    for lang in ("en", "zh"):
        err = json.loads(render(failure.error, lang))["error"]
        assert err["message"] == text and err["hint"] == text
        problem = json.loads(render(make_error("INVALID_ARGS", problems=[rule("x", text, text)]), lang))
        assert problem["error"]["problems"][0]["hint"] == text
    assert json.loads(render(None, data={"note": text, "list": [text]}))["data"] == {"note": text, "list": [text]}


# --- find_secrets: the same patterns, as a verdict ---------------------------------------------
@pytest.mark.parametrize("text,fragments", SECRETS, ids=[s[0][:30] for s in SECRETS])
def test_find_secrets_finds_every_credential(text, fragments):
    kinds = E.find_secrets(text)
    assert kinds, text
    assert all(isinstance(k, str) and k.startswith(("a ", "an ")) for k in kinds)
    assert E.find_secrets(E.redact_secrets(text)) == []  # what redaction leaves holds none


@pytest.mark.parametrize("text", BENIGN)
def test_find_secrets_finds_nothing_in_benign_text(text):
    assert E.find_secrets(text) == []


def test_find_secrets_names_the_kind():
    assert E.find_secrets("the password is hunter2") == ["a password"]
    assert "an API key" in E.find_secrets("key sk-proj-4fJ9kLmN2pQrS8tUvW1xYz0aBcDeFgHi in use")
    assert E.find_secrets("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----") == ["a private key"]
    assert E.find_secrets('Traceback (most recent call last):\n  File "x.py", line 1') == ["a stack trace"]
    assert E.find_secrets("postgresql://admin:s3cret@db/orders") == ["a password in a URL"]
    assert E.find_secrets("see " + render(None, data={"password": "hunter2"})) == []  # rendered: nothing left
    assert "find_secrets" in E.__all__


@pytest.mark.timeout(60)
def test_find_secrets_finishes_on_two_megabytes_and_still_finds():
    text = "password: " * 200_000 + "hunter2"
    assert E.find_secrets(text)  # the secret at the very end is still found


def test_technical_detail_is_still_fully_redacted():
    """Exception text keeps the broad patterns: telemetry must not store hosts, SQL or paths."""
    text = "SELECT * FROM refunds WHERE id = 1 at db.internal:5432 reading /etc/agentlab/secrets.yaml"
    out = redact(text)
    for leak in ("SELECT", "db.internal", "/etc/agentlab"):
        assert leak not in out
    body = json.loads(render(make_error("MODEL_ERROR", detail=text)))
    assert "db.internal" not in body["error"]["message"] and "SELECT" not in body["error"]["message"]


def test_model_values_echoed_as_got_are_fully_redacted(reg):
    body = json.loads(reg.check("get_order", {"order_id": "postgres://u:p@db.internal/x"}).render())
    assert "db.internal" not in json.dumps(body)
    body = json.loads(reg.check("get_order", {"order_id": ["db.internal", 1]}).render())
    assert "db.internal" not in json.dumps(body)


def test_custom_tool_failure_with_benign_text_reaches_the_model_through_the_loop():
    """End to end: a tool's own message arrives at the model byte for byte."""
    from agentlab.loop import run_guarded
    from agentlab.models import ScriptedModel, call, say, tool_calls
    text = "Please update the shipping address from the order page."

    def fn(order_id):
        raise ToolFailure("NOT_FOUND", text)
    reg = Registry([Tool("get_order", "Look up one order.", {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}, fn=fn)])
    model = ScriptedModel([tool_calls(call("get_order", {"order_id": "A1"})), say("ok")])
    run = run_guarded(model, reg, "where is my order?", sleep=lambda s: None)
    seen = [json.loads(m["content"]) for m in run.messages if m["role"] == "tool"]
    assert seen[0]["error"]["message"] == text


# --- properties over generated text ---------------------------------------------------------
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PROSE = st.one_of(
    st.text(alphabet=st.sampled_from(list("abcdefghij ABC.,:;=/@-_'\"\n\t0123456789密码是：令牌")), max_size=80),
    st.lists(st.sampled_from(["password", "token", "the", "is", ":", "=", " ", "secret", "密码", "是", "key",
                              "api_key", "Bearer", "expired", "://", "@", "sk-", "\n", "Traceback"]),
             max_size=12).map("".join))


@settings(max_examples=2000, deadline=None)
@given(before=_PROSE, after=_PROSE, case=st.sampled_from(SECRETS))
def test_a_credential_anywhere_in_text_is_removed(before, after, case):
    text, fragments = case
    out = E.redact_secrets(f"{before} {text} {after}")
    for fragment in fragments:
        assert fragment not in out or fragment in before + after, (before, text, after, out)


@settings(max_examples=300, deadline=None)
@given(text=_PROSE)
@example(text="sk-passwordtoken://:://")  # a second pass took the "://" a first left after a chained label
@example(text="password:password是password")  # the label before a Chinese "is" kept on the first pass, taken on the second
def test_redaction_is_idempotent_and_total(text):
    once = E.redact_secrets(text)
    assert E.redact_secrets(once) == once
    assert redact(redact(text)) == redact(text)
    assert E._cut(E._cut(text * 10, 100), 100) == E._cut(text * 10, 100)
    json.loads(render(None, data={"x": text}))


# --- cutting never shows half a key; a label swallowed as a value does not keep the secret after it -------
KEY = "sk-ABCDEFGHIJKLMNOPQRSTUVWX"


def _told(error, lang="en"):
    return json.loads(render(error, lang))["error"]["message"]


def _cut_inside_the_key(limit, filler, keep):
    """A text whose cut at ``limit`` falls ``keep`` characters into :data:`KEY`."""
    before = (filler * (limit // len(filler) + 1))[:limit - 1 - keep]
    return before + KEY + " and the rest"


@pytest.mark.parametrize("keep", range(1, len(KEY)))
@pytest.mark.parametrize("filler", ["word ", "q=1&", "x"], ids=["prose", "query string", "one long word"])
def test_a_cut_inside_a_key_takes_the_whole_key(keep, filler):
    # authored (a tool's message, TEXT_LIMIT) and technical (a detail, DETAIL_LIMIT) texts
    authored = _told(ToolFailure("NOT_FOUND", _cut_inside_the_key(E.TEXT_LIMIT, filler, keep)).error)
    technical = _told(make_error("BAD_JSON", detail=_cut_inside_the_key(E.DETAIL_LIMIT, filler, keep), example="{}"))
    for shown in (authored, technical):
        assert "sk-" not in shown and "ABC" not in shown, shown[-60:]


def test_a_model_value_echoed_back_never_shows_half_a_key():
    """The technical rules may shrink a text (a whole URL goes) and bring its cut end into view."""
    value = "https://example.com/" + "a" * (E.DETAIL_LIMIT - 30) + " " + KEY
    err = make_error("INVALID_ARGS", problems=[Problem("x", "wrong_type", expected="integer", got=value)])
    shown = render(err)
    assert "sk-" not in shown and "ABC" not in shown, shown


def test_a_cut_keeps_whole_words_and_chinese_text():
    assert E._cut("hello wonderful world", 12) == "hello …"
    assert E._cut("q=1&token=abcdef ghi", 12) == "…"  # one word from the start: all of it goes
    assert E._cut("您的订单已经退款，请查收邮件", 8) == "您的订单已经退…"  # every Chinese character ends a word
    assert E._cut("short", 10) == "short"


@pytest.mark.parametrize("text", ["password: pass: hunter2", "password: pass: hunter2 and more", "密码：pass: hunter2",
                                  "token: password: pass: hunter2", "Password = pass = hunter2"])
def test_a_label_taken_for_the_secret_does_not_keep_the_secret_after_it(text):
    for clean in (E.redact_secrets, redact):
        assert "hunter2" not in clean(text), clean(text)
    assert "hunter2" not in render(None, data={"note": text})
    assert E.find_secrets(text) == ["a password"]


# --- the slowest hostile shapes still redact what they must (their time: benchmarks/bench_redaction.py) ---------
@pytest.mark.parametrize(("shape", "secret", "fragment"), [
    ("phrase_kept", "passphrase: purple-monkey-dishwasher", "purple-monkey"),
    ("zh_keys", "令牌：ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijkl"),
])
def test_a_hostile_shape_keeps_its_own_words_and_loses_a_secret_inside_it(shape, secret, fragment):
    filler = SHAPES[shape] * (SIZES["64KB"] // len(SHAPES[shape]))  # whole units: a cut "the" could be a secret
    for clean in (E.redact_secrets, redact):
        assert clean(filler) == filler  # a label with no secret after it ("the", another label) is kept as written
        for text in (secret + " " + filler, filler + " " + secret, filler + " " + secret + " " + filler):
            out = clean(text)
            assert fragment not in out and "[secret removed]" in out, (shape, clean.__name__)
            # the words around it stay: a passphrase's value runs to the end of its sentence, 200 characters at most
            assert len(text) - len(out) <= 200 and out.count(SHAPES[shape]) >= text.count(SHAPES[shape]) - 200 // len(SHAPES[shape])


def test_the_trigger_precheck_picks_the_same_rules_as_each_trigger():
    """_active proves clean text clean in two searches; on any text it must pick what checking each trigger picks."""
    from agentlab import redaction as R
    texts = ["", "category", "Password: hunter2", "PASSWORD=x", "\u212aEY: v", "İD token: abc123", "密码是abc",
             'File \\"x.py\\", line 3', "Traceback (most recent call last):", "sk-abcdefgh12", "see the order page"]
    for rules in (R._SECRETS, R._ESCAPED, R._TECHNICAL_FIRST, R._TECHNICAL_LAST, R._SECRETS[3:7]):
        for text in texts:
            folded = text.lower()
            expected = [r for r in rules if any(n in (folded if r.fold else text) for n in r.needs)]
            assert R._active(rules, text) == expected, (text, rules[0].needs)


def test_the_clean_text_shortcut_changes_no_redaction():
    # redact_secrets skips a text holding none of the rules' triggers: it must answer what every rule would
    from agentlab import redaction as R
    triggers = sorted({n for r in R._SECRETS for n in r.needs})
    texts = ["", "Beijing: cloudy, 7 °C, humidity 35%.", "北京：多云", "[secret removed]: hunter2", "KEY: v", "ＫＥＹ"]
    texts += [f"{n} x" for n in triggers] + [f"a {n.upper()}: hunter2 b" for n in triggers]
    texts += [f"{n.title()}=s3cr3t-Value-99" for n in triggers] + ["K\u212aY=1", "pasſword: hunter2"]
    for text in texts:
        assert R.redact_secrets(text) == R._apply(R._SECRETS, text), text


GLUED_KEYS = ["sk-proj-Ab3dEfGh1jKlMnOpQrStUv", "ghp_abcdefghij1234567890ABCDEFGHIJ", "AKIAIOSFODNN7EXAMPLE",
              "glpat-abcdefghij1234567890", "xoxb-1234567890-abcdefghij", "sk_live_abcdef1234567890",
              "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "AIzaSyA1234567890abcdefghijklmnopqrstu"]


@pytest.mark.parametrize("key", GLUED_KEYS)
@pytest.mark.parametrize("glue", ["x-", "run-", "token-", "key_", "X_", "a1-"])
def test_a_key_glued_to_a_word_by_a_dash_or_underscore_is_removed(key, glue):
    """'x-sk-proj-...', 'run-ghp_...', 'token-AKIA...' reached a review's report: the key's left edge wanted a space."""
    text = f"header {glue}{key} trailer"
    for redactor in (redact_secrets, redact):
        out = redactor(text)
        assert key not in out and key[:12] not in out, out
        assert out.startswith("header ") and out.endswith(" trailer")
    assert "an API key" in find_secrets(text)


@pytest.mark.parametrize("name", ["my-pk-index-name", "task-sk-reference-guide", "use_ak-kernel-helper",
                                  "the risk-assessment-team", "a desk_sk-marker-label"])
def test_a_name_that_merely_contains_a_key_prefix_stays(name):
    assert redact_secrets(name) == name and find_secrets(name) == []


@pytest.mark.parametrize("text", ["password: pass: word: hunter2", "password: pass: word: code: hunter2",
                                  "token=pass=word=hunter2", "密码: pass: word: hunter2"])
def test_chained_labels_never_keep_the_secret_at_the_end(text):
    """'password: pass: word: hunter2' kept 'hunter2': only one swallowed label was followed."""
    out = redact_secrets(text)
    assert "hunter2" not in out and "[secret removed]" in out, out


def test_a_passphrase_after_is_or_was_is_judged_as_before_the_prose_words_were_ruled_out_early(monkeypatch):
    """The passphrase rule now fails at once on "is <a prose word>" (0.8-1.0 s of CPU for a megabyte of "passphrase
    is the "), instead of matching and keeping it: every sentence is redacted exactly as by the rule before."""
    import random
    import re

    from agentlab import redaction as R
    before = re.compile(
        r"(?P<key>pass[ _\-]?phrases?)(?![a-z])"
        r"(?P<sep>[\"']?[ \t]*+(?:[:=：]|(?<=[ \t])(?P<verb>is|was)(?=[ \t]))[ \t]*+[\"']?)"
        r"(?P<value>(?!\[)(?:[^\n\r\"'`;,.<>\[\]{}]|\.(?=\S)){1,200}+)", re.I)
    rng = random.Random(7)
    firsts = [*sorted(R._NOT_SECRETS), "The", "NONE", "correct", "hunter2", "the.x", "the:", "them", "a.", "n/a,", ""]
    tails = ["", " one you chose", " horse battery staple", ".", ", sadly", "\nnext", " is the", " passphrase: x9y"]
    sentences = [f"{k}{sep}{w}{tail}" for k in ("passphrase", "Passphrase", "pass-phrase", "passphrases")
                 for sep in (" is ", " was ", ": ", " is  ", "='", " IS ") for w in rng.sample(firsts, 12)
                 for tail in rng.sample(tails, 3)]
    now = [R.redact(s) for s in sentences]
    rules = [r._replace(pattern=before) if r.pattern is R._PASSPHRASE else r for r in R._SECRETS]
    monkeypatch.setattr(R, "_SECRETS", rules)
    monkeypatch.setattr(R, "_PASSPHRASE", before)
    then = [R.redact(s) for s in sentences]
    assert sum(a != s for a, s in zip(now, sentences, strict=True)) > 50  # the rule did redact many of them
    assert now == then, [(s, a, b) for s, a, b in zip(sentences, now, then, strict=True) if a != b][:5]


@pytest.mark.parametrize("text", ["sk-password:pass: hunter2 ", "password:pwd= hunter2", "x sk-password: pass: hunter2",
                                  "password:pass：hunter2", 'password:pass": "hunter2', "password: pwd: hunter2"])
def test_a_label_swallowed_as_a_value_never_lets_the_secret_after_it_through(text):
    """Found by the property test: the key shape cut into the mark the label rule left ("[secret removed]:[secret"),
    the chain of labels stopped there, and hunter2 was shown; "pwd=" kept its "=" inside the value it redacted."""
    out = redact_secrets(text)
    assert "hunter2" not in out and redact_secrets(out) == out and out.count("[") == out.count("]"), out
    assert "a password" in find_secrets(text) or "an API key" in find_secrets(text)


@pytest.mark.parametrize("text, kept", [
    ("api_key=c2VjcmV0MTIz== was rejected by the server", " was rejected by the server"),
    ("token: dGhpc2lzYXNlY3JldDEyMw== please rotate it", " please rotate it"),
    ("secret=QUJDREVGRzEyMzQ1Ng== amount=45.5", " amount=45.5"),
    ('{"session_id": "YWJjZGVmZ2hpams0NTY=", "user": "bob"}', '", "user": "bob"}'),
    ("the access_token=abc123XYZ== expired; order=A1001", " expired; order=A1001"),
])
def test_a_secret_ending_in_base64_padding_takes_nothing_after_it(text, kept):
    """A value's padding "=" left after its mark was read as one more label's "=", and the word after it went too."""
    out = redact_secrets(text)
    assert out.endswith(kept) and "[secret removed]" in out and redact_secrets(out) == out, out


def test_a_mainland_id_number_is_masked_and_escapes_are_read_before_any_rule():
    from agentlab.i18n import said_marks
    from agentlab.redaction import mask_personal, redact, redact_secrets
    assert mask_personal("id 11010519491231002X, ok") == "id [ID …2X], ok"
    assert mask_personal("身份证号110105194912310021。") == "身份证号[ID …21]。"  # a mistyped one is still a person's
    assert said_marks(mask_personal("11010519491231002X"), "zh") == "[身份证号 …2X]"
    assert mask_personal("A1001 order 2024120512") == "A1001 order 2024120512"
    assert "0070roj" not in redact_secrets('{"k": "sk-\\u0070roj-AbCdEf1234567890AbCdEf1234567890XyZ"}')
    assert redact('"jane\\u002edoe\\u0040corp-mail.com"') == '"[address removed]"'
    # an escape JSON needs stays one, and an escaped backslash is text: the JSON reads the same as before
    for text in ('"a \\u0022 b \\u005c c \\u0000 d \\ud83d"', '"\\\\u0070"'):
        assert redact_secrets(text) == text and json.loads(redact_secrets(text)) == json.loads(text)
