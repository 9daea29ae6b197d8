"""Hands generated schemas and grammars to real constrained decoders and reports what they do.

Input (stdin, JSON): {"cases": [{"name", "schema": <JSON Schema text>, "gbnf": <GBNF text>,
"batches": [{"label", "text"}]}]}. Output (stdout, JSON): for each case and decoder whether the
schema or grammar compiled (or the error), and for each batch whether the decoder lets a model write
exactly that text. Decoders: llguidance on the JSON Schema and on the GBNF grammar, outlines-core on
the JSON Schema (it reads no grammars). Both are driven token by token with a byte-level vocabulary,
so "accepts" means every byte was allowed in turn and the text may end there.
"""

import importlib.metadata
import json
import sys

import llguidance
import outlines_core
from outlines_core.json_schema import build_regex_from_schema

EOS = 256


class ByteTokenizer:
    """One token per byte, plus an end-of-sequence token."""

    eos_token_id = EOS
    bos_token_id = None
    tokens = [bytes([b]) for b in range(256)] + [b"<eos>"]
    special_token_ids = [EOS]

    def __call__(self, text):
        return list(text.encode() if isinstance(text, str) else text)


LL_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(ByteTokenizer()), slices=[])
# One token per byte for outlines-core too (it takes tokens as bytes), so multi-byte characters are
# written byte by byte.
VOCABULARY = outlines_core.Vocabulary(EOS, {bytes([b]): [b] for b in range(1, 256)})


def llguidance_grammar(kind, text):
    grammar = llguidance.grammar_from(kind, text)
    error = llguidance.LLMatcher.validate_grammar(grammar, LL_TOKENIZER)
    if error and not error.startswith("WARNING"):
        raise ValueError(error)
    return grammar


def llguidance_accepts(grammar, text):
    matcher = llguidance.LLMatcher(LL_TOKENIZER, grammar, log_level=0)
    tokens = list(text.encode())
    if matcher.try_consume_tokens(tokens) != len(tokens):
        return False
    return matcher.is_accepting()


def outlines_index(schema):
    regex = build_regex_from_schema(schema)
    return outlines_core.Index(regex, VOCABULARY)


def outlines_accepts(index, text):
    guide = outlines_core.Guide(index)
    for token in text.encode():
        if token not in guide.get_tokens():
            return False
        guide.advance(token)
    return guide.is_finished() or EOS in guide.get_tokens()


def run_case(case):
    decoders = {}
    compiled = {}
    for name, build in [
        ("llguidance-schema", lambda: llguidance_grammar("json_schema", case["schema"])),
        ("llguidance-gbnf", lambda: llguidance_grammar("gbnf", case["gbnf"])),
        ("outlines-core-schema", lambda: outlines_index(case["schema"])),
    ]:
        try:
            compiled[name] = build()
            decoders[name] = {"compiled": True, "error": None, "accepts": {}}
        except Exception as error:  # a decoder's refusal is a result to report, not a crash
            decoders[name] = {"compiled": False, "error": str(error)[:500], "accepts": {}}
    for batch in case["batches"]:
        for name, grammar in compiled.items():
            if name.startswith("outlines"):
                verdict = outlines_accepts(grammar, batch["text"])
            else:
                verdict = llguidance_accepts(grammar, batch["text"])
            decoders[name]["accepts"][batch["label"]] = verdict
    return {"name": case["name"], "decoders": decoders}


def main():
    job = json.load(sys.stdin)
    report = {
        "versions": {
            "llguidance": llguidance.__version__,
            "outlines_core": importlib.metadata.version("outlines-core"),
        },
        "cases": [run_case(case) for case in job["cases"]],
    }
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
