"""The character ranking's bounds: each at least what it bounds, so skipping on them never changes an answer.

The answers themselves are held to the exhaustive ranking in test_suggest.py; here the pieces it trusts."""
import difflib
import random

from agentlab.likeness import letter_bits, positions, subsequence


def table(a: str, b: str) -> int:
    """The longest common subsequence the plain way: a table of both."""
    prev = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
        prev = row
    return prev[-1]


def test_the_subsequence_is_the_tables_on_random_texts():
    rng = random.Random(5)
    alphabet = "ab_01é字"
    for _ in range(3000):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert subsequence(positions(a), len(a), b) == table(a, b), (a, b)
    long = "field_" * 30  # past 64 characters: the bits are a Python int, not a machine word
    assert subsequence(positions(long), len(long), long[::-1]) == table(long, long[::-1])


def test_difflib_never_matches_more_than_the_subsequence_nor_that_more_than_the_letters():
    """The chain the walk refines along: quick_ratio >= the subsequence's ratio >= difflib's ratio."""
    rng = random.Random(6)
    words = ["field", "alpha", "beta", "order", "id", "7", "416", "4416", "refund"]
    for _ in range(3000):
        a = "_".join(sorted(rng.sample(words, rng.randint(1, 3))))
        b = "_".join(sorted(rng.sample(words, rng.randint(1, 3))))
        if rng.random() < 0.5:
            i = rng.randrange(len(b))
            b = b[:i] + b[i + 1:] + rng.choice("aeo1")
        matcher = difflib.SequenceMatcher(None, a, b)
        common = 2 * subsequence(positions(a), len(a), b) / (len(a) + len(b))
        assert matcher.quick_ratio() >= common >= matcher.ratio(), (a, b)


def test_letter_bits_differ_by_at_most_four_for_two_edits():
    assert (letter_bits("categroy") ^ letter_bits("category")).bit_count() == 0
    assert (letter_bits("amount") ^ letter_bits("amnt")).bit_count() == 2
    assert letter_bits("é") and letter_bits("字")  # outside ASCII: still a bit each


def test_matched_is_what_difflib_matches():
    """The ratio the ranking compares is difflib's, to the character: the same blocks, ties and all (small
    alphabets make many equally long blocks), texts without a common character, and past difflib's junk length."""
    from agentlab.likeness import matched

    rng = random.Random(7)
    for _ in range(30000):
        alphabet = rng.choice(["ab", "abc", "ab_1", "abcdefgh_0123", "é字a"])
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        want = sum(m.size for m in difflib.SequenceMatcher(None, a, b).get_matching_blocks())
        assert matched(a, b) == want, (a, b)
    long = "".join(rng.choice("abcde") for _ in range(250))  # difflib's junk rule applies from 200 characters of b
    for a in (long[:120], long[::-1][:128], "zzz"):
        assert matched(a, long) == sum(m.size for m in difflib.SequenceMatcher(None, a, long).get_matching_blocks())
    assert matched("4416_beta_field", "16_beta_field") == 13 and matched("", "abc") == matched("abc", "") == 0


def test_letters_counted_share_as_difflib_counts_the_letters_two_texts_share():
    """One AND and a bit count of two spellings' counted letters is the multiset overlap quick_ratio counts."""
    from collections import Counter

    from agentlab.likeness import letters_counted

    rng = random.Random(8)
    texts = tuple("".join(rng.choice("aab_1é") for _ in range(rng.randint(0, 10))) for _ in range(300))
    counted, _ = letters_counted(texts)
    for i in range(0, 300, 7):
        for j in range(0, 300, 11):
            want = sum((Counter(texts[i]) & Counter(texts[j])).values())
            assert (counted[i] & counted[j]).bit_count() == want, (texts[i], texts[j])
