//! The token estimator every budget and count of the prompt kit uses.
//!
//! Models count text in tokens of their own tokenizer, which the engine does not have and must not
//! guess at per model. The estimate is a fixed rule over character classes, chosen so that it does not
//! undercount the BPE and SentencePiece tokenizers chat models use (cl100k, o200k, Llama, Mistral,
//! Qwen, Claude) on JSON-like text; it overcounts plain English prose, which is the cheap direction for
//! a budget. The rule (docs/state-view.md):
//!
//! - a run of ASCII letters: one token per 4 letters, rounded up (`hp` 1, `description` 3);
//! - every ASCII digit: one token (SentencePiece tokenizers split numbers into digits);
//! - a run of spaces or tabs: one token per 4, rounded up, not counting the last when it directly
//!   precedes a letter (tokenizers join a single leading space to a word; SentencePiece tokenizers
//!   keep it apart from a digit);
//! - every line break and every other ASCII character (punctuation, quotes, brackets): one token;
//! - every other character: one token per 2 bytes of its UTF-8 encoding, rounded up (accented Latin,
//!   Cyrillic: 1; Chinese, Japanese: 2; emoji: 2).
//!
//! It must stay additive over lines: the estimate of lines joined by `\n` is the sum of theirs plus
//! one per line break, which the view's budgeting relies on.

/// The estimated number of tokens of `text` (see the module's rule).
///
/// Time: O(text).
pub fn estimate_tokens(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut tokens = 0;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if byte.is_ascii_alphabetic() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            tokens += (i - start).div_ceil(4);
        } else if byte.is_ascii_digit() {
            tokens += 1;
            i += 1;
        } else if byte == b' ' || byte == b'\t' {
            let start = i;
            while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
                i += 1;
            }
            let mut run = i - start;
            if i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                run -= 1;
            }
            tokens += run.div_ceil(4);
        } else if byte.is_ascii() {
            tokens += 1;
            i += 1;
        } else {
            // A character's first byte says its length; `text` is valid UTF-8.
            let length: usize = match byte {
                0xF0..=0xFF => 4,
                0xE0..=0xEF => 3,
                _ => 2,
            };
            tokens += length.div_ceil(2);
            i += length;
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_rule() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("hp"), 1);
        assert_eq!(estimate_tokens("description"), 3);
        assert_eq!(estimate_tokens("123"), 3);
        assert_eq!(estimate_tokens("\"hp\": 30,"), 1 + 1 + 1 + 1 + 1 + 2 + 1);
        assert_eq!(estimate_tokens("    \"a\""), 1 + 1 + 1 + 1);
        assert_eq!(estimate_tokens("  a"), 1 + 1);
        assert_eq!(estimate_tokens("好感度"), 6);
        assert_eq!(estimate_tokens("é"), 1);
        assert_eq!(estimate_tokens("🙂"), 2);
        assert_eq!(estimate_tokens("a\nb"), 3);
    }

    #[test]
    fn additive_over_lines() {
        let lines = ["{", "  \"player\": {", "    \"hp\": 30", "  }", "}"];
        let joined = lines.join("\n");
        let sum: usize = lines.iter().map(|l| estimate_tokens(l)).sum();
        assert_eq!(estimate_tokens(&joined), sum + lines.len() - 1);
    }
}
