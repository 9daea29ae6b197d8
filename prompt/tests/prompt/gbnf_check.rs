//! A GBNF reader, recogniser and sampler for the tests: enough of llama.cpp's grammar format to check
//! the grammars the prompt kit writes (literals, character classes with ranges, negation and escapes,
//! rule references, groups, alternation, `*`, `+`, `?` and `{m}`, `{m,}`, `{m,n}`).
//!
//! The recogniser computes, for each rule and start position, every position a match can end at
//! (memoised), so it is exact for any grammar without left recursion, which the generated grammars
//! never have. It must not be used as a parser of untrusted grammars: it is test code.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// A parsed grammar.
pub(crate) struct Grammar {
    names: Vec<String>,
    rules: Vec<Alt>,
}

type Alt = Vec<Seq>;
type Seq = Vec<Item>;

struct Item {
    node: Node,
    min: usize,
    max: Option<usize>,
}

enum Node {
    Literal(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Rule(usize),
    Group(Alt),
}

impl Grammar {
    /// Reads a grammar written one rule per line (`name ::= body`). Errors name the line.
    pub(crate) fn parse(text: &str) -> Result<Grammar, String> {
        let mut names = Vec::new();
        let mut bodies = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let (name, body) = line
                .split_once(" ::= ")
                .ok_or_else(|| format!("line {}: no ::=", number + 1))?;
            if names.iter().any(|n| n == name.trim()) {
                return Err(format!("line {}: rule {name} defined twice", number + 1));
            }
            names.push(name.trim().to_owned());
            bodies.push(body.to_owned());
        }
        let mut rules = Vec::new();
        for (index, body) in bodies.iter().enumerate() {
            let chars: Vec<char> = body.chars().collect();
            let mut reader = Reader {
                chars: &chars,
                at: 0,
                names: &names,
            };
            let alt = reader
                .alternatives()
                .map_err(|e| format!("rule {}: {e}", names[index]))?;
            reader.skip_space();
            if reader.at != chars.len() {
                return Err(format!(
                    "rule {}: unexpected {:?} at {}",
                    names[index], chars[reader.at], reader.at
                ));
            }
            rules.push(alt);
        }
        if !names.iter().any(|n| n == "root") {
            return Err("no root rule".into());
        }
        Ok(Grammar { names, rules })
    }

    fn root(&self) -> usize {
        self.names.iter().position(|n| n == "root").unwrap_or(0)
    }

    /// Whether the whole `text` matches `root`.
    pub(crate) fn recognises(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let mut matcher = Matcher {
            grammar: self,
            chars: &chars,
            memo: HashMap::new(),
        };
        matcher.rule(self.root(), 0).contains(&chars.len())
    }

    /// A random string of the language, using `next` as the random source. Past `budget` levels of
    /// rule nesting every choice takes the shortest way out, so sampling always ends.
    pub(crate) fn sample(&self, next: &mut dyn FnMut(usize) -> usize, budget: usize) -> String {
        let heights = self.heights();
        let mut out = String::new();
        self.sample_alt(
            &self.rules[self.root()],
            0,
            budget,
            &heights,
            next,
            &mut out,
        );
        out
    }

    /// For each rule, the least nesting depth a finite expansion needs.
    fn heights(&self) -> Vec<usize> {
        let mut heights = vec![usize::MAX; self.rules.len()];
        loop {
            let mut changed = false;
            for (index, alt) in self.rules.iter().enumerate() {
                let h = alt_height(alt, &heights);
                if h < heights[index] {
                    heights[index] = h;
                    changed = true;
                }
            }
            if !changed {
                return heights;
            }
        }
    }

    fn sample_alt(
        &self,
        alt: &Alt,
        depth: usize,
        budget: usize,
        heights: &[usize],
        next: &mut dyn FnMut(usize) -> usize,
        out: &mut String,
    ) {
        let seq = if depth >= budget {
            alt.iter()
                .min_by_key(|seq| seq_height(seq, heights))
                .unwrap_or(&alt[0])
        } else {
            // Only sequences that can finish are candidates.
            let finite: Vec<&Seq> = alt
                .iter()
                .filter(|seq| seq_height(seq, heights) < usize::MAX)
                .collect();
            finite[next(finite.len())]
        };
        for item in seq {
            let count = if depth >= budget {
                item.min
            } else {
                let spread = item.max.map_or(2, |max| (max - item.min).min(2));
                item.min + next(spread + 1)
            };
            for _ in 0..count {
                match &item.node {
                    Node::Literal(chars) => out.extend(chars),
                    Node::Class { negated, ranges } => {
                        out.push(sample_class(*negated, ranges, next))
                    }
                    Node::Rule(index) => {
                        self.sample_alt(&self.rules[*index], depth + 1, budget, heights, next, out)
                    }
                    Node::Group(alt) => self.sample_alt(alt, depth + 1, budget, heights, next, out),
                }
            }
        }
    }
}

fn alt_height(alt: &Alt, heights: &[usize]) -> usize {
    alt.iter()
        .map(|seq| seq_height(seq, heights))
        .min()
        .unwrap_or(usize::MAX)
}

fn seq_height(seq: &Seq, heights: &[usize]) -> usize {
    seq.iter()
        .filter(|item| item.min > 0)
        .map(|item| match &item.node {
            Node::Literal(_) | Node::Class { .. } => 0,
            Node::Rule(index) => heights[*index].saturating_add(1),
            Node::Group(alt) => alt_height(alt, heights).saturating_add(1),
        })
        .max()
        .unwrap_or(0)
}

fn sample_class(
    negated: bool,
    ranges: &[(char, char)],
    next: &mut dyn FnMut(usize) -> usize,
) -> char {
    if negated {
        let pool = ['a', 'Z', '0', ' ', '~', '\'', 'é', '中', '😀', '/', '{'];
        let allowed: Vec<char> = pool
            .into_iter()
            .filter(|c| !ranges.iter().any(|(lo, hi)| lo <= c && c <= hi))
            .collect();
        return allowed[next(allowed.len())];
    }
    let (lo, hi) = ranges[next(ranges.len())];
    let span = hi as u32 - lo as u32 + 1;
    char::from_u32(lo as u32 + next(span as usize) as u32).unwrap_or(lo)
}

struct Matcher<'a> {
    grammar: &'a Grammar,
    chars: &'a [char],
    memo: HashMap<(usize, usize), Rc<BTreeSet<usize>>>,
}

impl Matcher<'_> {
    fn rule(&mut self, index: usize, at: usize) -> Rc<BTreeSet<usize>> {
        if let Some(found) = self.memo.get(&(index, at)) {
            return found.clone();
        }
        let grammar = self.grammar;
        let ends = Rc::new(self.alt(&grammar.rules[index], at));
        self.memo.insert((index, at), ends.clone());
        ends
    }

    fn alt(&mut self, alt: &Alt, at: usize) -> BTreeSet<usize> {
        let mut ends = BTreeSet::new();
        for seq in alt {
            let mut here = BTreeSet::from([at]);
            for item in seq {
                let mut next = BTreeSet::new();
                for &position in &here {
                    next.extend(self.item(item, position));
                }
                here = next;
                if here.is_empty() {
                    break;
                }
            }
            ends.extend(here);
        }
        ends
    }

    fn item(&mut self, item: &Item, at: usize) -> BTreeSet<usize> {
        let mut ends = BTreeSet::new();
        let mut frontier = BTreeSet::from([at]);
        let mut seen = BTreeSet::new();
        let mut count = 0;
        loop {
            if count >= item.min {
                ends.extend(frontier.iter().copied());
            }
            if item.max.is_some_and(|max| count >= max) || frontier.is_empty() {
                return ends;
            }
            let mut next = BTreeSet::new();
            for &position in &frontier {
                next.extend(self.node(&item.node, position));
            }
            count += 1;
            // Past the minimum, a position already reached adds nothing new (this also ends `*` over
            // a node that can match the empty string).
            if count > item.min {
                next.retain(|p| !seen.contains(p));
                seen.extend(next.iter().copied());
            }
            frontier = next;
        }
    }

    fn node(&mut self, node: &Node, at: usize) -> BTreeSet<usize> {
        match node {
            Node::Literal(chars) => {
                if self.chars[at.min(self.chars.len())..].starts_with(chars) {
                    BTreeSet::from([at + chars.len()])
                } else {
                    BTreeSet::new()
                }
            }
            Node::Class { negated, ranges } => match self.chars.get(at) {
                Some(c) if ranges.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated => {
                    BTreeSet::from([at + 1])
                }
                _ => BTreeSet::new(),
            },
            Node::Rule(index) => (*self.rule(*index, at)).clone(),
            Node::Group(alt) => self.alt(alt, at),
        }
    }
}

struct Reader<'a> {
    chars: &'a [char],
    at: usize,
    names: &'a [String],
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|c| c == ' ') {
            self.at += 1;
        }
    }

    fn alternatives(&mut self) -> Result<Alt, String> {
        let mut alt = vec![self.sequence()?];
        loop {
            self.skip_space();
            if self.peek() == Some('|') {
                self.at += 1;
                alt.push(self.sequence()?);
            } else {
                return Ok(alt);
            }
        }
    }

    fn sequence(&mut self) -> Result<Seq, String> {
        let mut seq = Vec::new();
        loop {
            self.skip_space();
            let node = match self.peek() {
                None | Some('|') | Some(')') => return Ok(seq),
                Some('"') => {
                    self.at += 1;
                    let mut chars = Vec::new();
                    loop {
                        match self.peek() {
                            None => return Err("unclosed literal".into()),
                            Some('"') => {
                                self.at += 1;
                                break;
                            }
                            Some(_) => chars.push(self.character()?),
                        }
                    }
                    Node::Literal(chars)
                }
                Some('[') => {
                    self.at += 1;
                    let negated = self.peek() == Some('^');
                    if negated {
                        self.at += 1;
                    }
                    let mut ranges = Vec::new();
                    loop {
                        match self.peek() {
                            None => return Err("unclosed class".into()),
                            Some(']') => {
                                self.at += 1;
                                break;
                            }
                            Some(_) => {
                                let lo = self.character()?;
                                let hi = if self.peek() == Some('-')
                                    && self.chars.get(self.at + 1) != Some(&']')
                                {
                                    self.at += 1;
                                    self.character()?
                                } else {
                                    lo
                                };
                                ranges.push((lo, hi));
                            }
                        }
                    }
                    Node::Class { negated, ranges }
                }
                Some('(') => {
                    self.at += 1;
                    let alt = self.alternatives()?;
                    self.skip_space();
                    if self.peek() != Some(')') {
                        return Err("unclosed group".into());
                    }
                    self.at += 1;
                    Node::Group(alt)
                }
                Some(c) if c.is_ascii_alphanumeric() || c == '-' => {
                    let start = self.at;
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                    {
                        self.at += 1;
                    }
                    let name: String = self.chars[start..self.at].iter().collect();
                    let index = self
                        .names
                        .iter()
                        .position(|n| *n == name)
                        .ok_or_else(|| format!("undefined rule {name}"))?;
                    Node::Rule(index)
                }
                Some(c) => return Err(format!("unexpected {c:?}")),
            };
            let (min, max) = self.quantifier()?;
            seq.push(Item { node, min, max });
        }
    }

    fn quantifier(&mut self) -> Result<(usize, Option<usize>), String> {
        match self.peek() {
            Some('*') => {
                self.at += 1;
                Ok((0, None))
            }
            Some('+') => {
                self.at += 1;
                Ok((1, None))
            }
            Some('?') => {
                self.at += 1;
                Ok((0, Some(1)))
            }
            Some('{') => {
                let end = self.chars[self.at..]
                    .iter()
                    .position(|c| *c == '}')
                    .ok_or("unclosed repetition")?;
                let inside: String = self.chars[self.at + 1..self.at + end].iter().collect();
                self.at += end + 1;
                let number = |s: &str| s.trim().parse::<usize>().map_err(|e| e.to_string());
                match inside.split_once(',') {
                    None => {
                        let n = number(&inside)?;
                        Ok((n, Some(n)))
                    }
                    Some((m, n)) if n.trim().is_empty() => Ok((number(m)?, None)),
                    Some((m, n)) => Ok((number(m)?, Some(number(n)?))),
                }
            }
            _ => Ok((1, Some(1))),
        }
    }

    fn character(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or("unexpected end")?;
        self.at += 1;
        if c != '\\' {
            return Ok(c);
        }
        let escaped = self.peek().ok_or("unexpected end after \\")?;
        self.at += 1;
        let hex = |reader: &mut Reader<'_>, digits: usize| -> Result<char, String> {
            let text: String = reader
                .chars
                .get(reader.at..reader.at + digits)
                .ok_or("short escape")?
                .iter()
                .collect();
            reader.at += digits;
            u32::from_str_radix(&text, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| format!("bad escape {text}"))
        };
        match escaped {
            'n' => Ok('\n'),
            't' => Ok('\t'),
            'r' => Ok('\r'),
            'x' => hex(self, 2),
            'u' => hex(self, 4),
            'U' => hex(self, 8),
            other => Ok(other),
        }
    }
}
