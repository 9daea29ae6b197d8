//! The math.js subset MVU arguments are evaluated with (docs/mvu.md), by a small parser of its own.
//!
//! MVU hands an argument it could not read as JSON to math.js and keeps a number result rounded to 12
//! significant digits. This module evaluates the common, side-effect-free part of that language the
//! same way: number literals, `+ - * / %`, `^`, parentheses, unary signs, the constants `pi` and `e`,
//! and `abs ceil floor round trunc sign sqrt cbrt exp log log2 log10 pow min max sin cos tan asin acos
//! atan atan2`, bare or as `math.x` (math.js's functions, with its tolerance in `floor`, `ceil` and
//! `round`, and `log(x, base)`) or `Math.x` (JavaScript's `Math` object, which MVU also puts in scope).
//! It also recognises, without running them, the rest of math.js's syntax (other functions, method
//! calls, matrices, strings, implicit multiplication, factorials, percentages, assignments), so that
//! text math.js would evaluate differently is kept as text with a reason, while text math.js would
//! refuse (an unknown name such as `x` in `[x, y]`) goes on to MVU's YAML reading.
//!
//! Nothing is executed: the parser computes IEEE doubles as it goes. Input is bounded by
//! [`MAX_LENGTH`] and nesting by [`MAX_DEPTH`], and each byte is read once, so hostile text such as a
//! megabyte of `(` or of `2^` costs a length check. It must not know about commands, paths or YAML.

use std::borrow::Cow;

use serde_json::Number;

/// The longest text evaluated; longer text is kept as text.
pub(crate) const MAX_LENGTH: usize = 4096;

/// How deeply parentheses, brackets, calls, signs and powers may nest.
pub(crate) const MAX_DEPTH: usize = 64;

/// What the math.js subset made of a text.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MathOutcome {
    /// A number, rounded to 12 significant digits as MVU rounds; an integral result is an integer.
    Number(Number),
    /// math.js would read this text, but it uses something outside the evaluated subset, or its
    /// result has no JSON number form; the reason says which. The caller keeps the text.
    Outside(Cow<'static, str>),
    /// Not an expression math.js would evaluate (it names an unknown symbol or is not its syntax).
    NotMath,
}

/// Evaluates `text` as the math.js subset. Never panics; time is linear in the length of `text`.
pub fn evaluate(text: &str) -> MathOutcome {
    let text = text.trim();
    if text.is_empty()
        || !text
            .bytes()
            .any(|b| b.is_ascii_digit() || b.is_ascii_alphabetic())
    {
        return MathOutcome::NotMath;
    }
    if text.len() > MAX_LENGTH {
        return if text.bytes().all(|b| b.is_ascii() && !b.is_ascii_control()) {
            MathOutcome::Outside(Cow::Owned(format!(
                "longer than {MAX_LENGTH} bytes, the most that is evaluated"
            )))
        } else {
            MathOutcome::NotMath
        };
    }
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        after_blanks: usize::MAX,
        depth: 0,
        outside: None,
        string: false,
        arguments: Vec::new(),
    };
    let value = match parser.expression() {
        Ok(value) => value,
        Err(Stop::NotMath) => return MathOutcome::NotMath,
        Err(Stop::TooDeep) => {
            return MathOutcome::Outside(Cow::Owned(format!(
                "nested deeper than {MAX_DEPTH} levels, the most that is evaluated"
            )));
        }
    };
    parser.blank();
    if parser.at != parser.bytes.len() {
        return MathOutcome::NotMath;
    }
    if let Some(reason) = parser.outside {
        return MathOutcome::Outside(reason);
    }
    if parser.string {
        return MathOutcome::Outside(Cow::Borrowed("a string"));
    }
    if !value.is_finite() {
        return MathOutcome::Outside(Cow::Borrowed(
            "its result is not a finite number (json has no form for it)",
        ));
    }
    MathOutcome::Number(to_json_number(round_significant(value)))
}

/// Why parsing stopped before the end.
enum Stop {
    /// math.js would refuse the text: its syntax, or a name it does not know.
    NotMath,
    /// Deeper than [`MAX_DEPTH`].
    TooDeep,
}

type Eval = Result<f64, Stop>;

/// Which library a function name refers to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Library {
    /// math.js's functions: bare names and `math.x`.
    MathJs,
    /// JavaScript's `Math` object: `Math.x`.
    JavaScript,
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    /// The last position [`Parser::blank`] stopped at: every level of the descent looks past blanks at
    /// the same position, and only the first needs to.
    after_blanks: usize,
    depth: usize,
    /// The first reason the text falls outside the subset; parsing continues to check the syntax.
    outside: Option<Cow<'static, str>>,
    /// Whether the text holds a string, the reason given when there is no more telling one.
    string: bool,
    /// Arguments of the calls being read, innermost last: one vector for the whole text.
    arguments: Vec<f64>,
}

impl<'t> Parser<'t> {
    fn blank(&mut self) {
        if self.at == self.after_blanks {
            return;
        }
        while self
            .bytes
            .get(self.at)
            .is_some_and(|&b| b == b' ' || b == b'\t')
        {
            self.at += 1;
        }
        self.after_blanks = self.at;
    }

    /// The next byte after blanks.
    fn peek(&mut self) -> Option<u8> {
        self.blank();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn outside(&mut self, reason: impl Into<Cow<'static, str>>) {
        if self.outside.is_none() {
            self.outside = Some(reason.into());
        }
    }

    /// Runs `f` one level deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Stop>) -> Result<T, Stop> {
        if self.depth >= MAX_DEPTH {
            return Err(Stop::TooDeep);
        }
        self.depth += 1;
        let value = f(self);
        self.depth -= 1;
        value
    }

    /// `name = value` (an assignment, never run) or a sum.
    fn expression(&mut self) -> Eval {
        let start = self.at;
        if self.identifier().is_some()
            && self.peek() == Some(b'=')
            && self.bytes.get(self.at + 1) != Some(&b'=')
        {
            self.at += 1;
            self.outside("an assignment, which is never run");
            return self.nested(Self::expression);
        }
        self.at = start;
        let value = self.sum()?;
        if self.eat(b':') {
            // `10:30` is a math.js range, which MVU turns into a matrix; docs/mvu.md keeps it as text.
            self.outside("a range (`a:b`)");
            self.sum()?;
            if self.eat(b':') {
                self.sum()?;
            }
        }
        Ok(value)
    }

    fn sum(&mut self) -> Eval {
        let mut total = self.product()?;
        loop {
            if self.eat(b'+') {
                total += self.product()?;
            } else if self.eat(b'-') {
                total -= self.product()?;
            } else {
                return Ok(total);
            }
        }
    }

    fn product(&mut self) -> Eval {
        let mut total = self.implicit()?;
        loop {
            if self.eat(b'*') {
                total *= self.implicit()?;
            } else if self.eat(b'/') {
                total /= self.implicit()?;
            } else if self.eat(b'%') {
                if self.starts_operand() {
                    total = modulo(total, self.implicit()?);
                } else {
                    // `50%` with nothing after it is math.js's percentage, which docs/mvu.md keeps as text.
                    self.outside("a percentage (`%` with nothing after it)");
                }
            } else {
                return Ok(total);
            }
        }
    }

    /// Whether an operand starts here (after blanks): what may follow a binary operator.
    fn starts_operand(&mut self) -> bool {
        matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'.' | b'(' | b'[' | b'-' | b'+' | b'\'' | b'"')
        ) || self.peek().is_some_and(is_name_start)
    }

    /// Operands written side by side (`2pi`, `3i`, `(1)(2)`): math.js multiplies them.
    fn implicit(&mut self) -> Eval {
        let mut total = self.unary()?;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'.' | b'(' | b'['))
            || self.peek().is_some_and(is_name_start)
        {
            self.outside("implicit multiplication (two operands side by side)");
            total *= self.unary()?;
        }
        Ok(total)
    }

    fn unary(&mut self) -> Eval {
        if self.eat(b'-') {
            return self.nested(Self::unary).map(|v| -v);
        }
        if self.eat(b'+') {
            return self.nested(Self::unary);
        }
        self.power()
    }

    /// `a ^ b`, right-associative, with a signed exponent (`2^-1`), as in math.js.
    fn power(&mut self) -> Eval {
        let base = self.postfix()?;
        if self.eat(b'^') {
            let exponent = self.nested(Self::unary)?;
            return Ok(self.pow(base, exponent));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Eval {
        let value = self.primary()?;
        while self.peek() == Some(b'!') && self.bytes.get(self.at + 1) != Some(&b'=') {
            self.at += 1;
            self.outside("a factorial (`!`)");
        }
        Ok(value)
    }

    fn primary(&mut self) -> Eval {
        match self.peek().ok_or(Stop::NotMath)? {
            b'(' => {
                self.at += 1;
                let value = self.nested(Self::expression)?;
                if !self.eat(b')') {
                    return Err(Stop::NotMath);
                }
                self.member_chain(value)
            }
            b'[' => {
                self.at += 1;
                self.nested(Self::matrix)
            }
            b'0'..=b'9' | b'.' => self.number(),
            b'\'' | b'"' => {
                self.string()?;
                self.string = true;
                Ok(f64::NAN)
            }
            b if is_name_start(b) => self.name(),
            _ => Err(Stop::NotMath),
        }
    }

    /// `[1, 2; 3, 4]`: math.js builds a matrix, which is outside the subset.
    fn matrix(&mut self) -> Eval {
        self.outside("a matrix");
        if self.eat(b']') {
            return Ok(f64::NAN);
        }
        loop {
            self.expression()?;
            if self.eat(b']') {
                return self.member_chain(f64::NAN);
            }
            if !(self.eat(b',') || self.eat(b';')) {
                return Err(Stop::NotMath);
            }
        }
    }

    /// `.name` and `(args)` after a value: method calls and property reads, outside the subset.
    fn member_chain(&mut self, value: f64) -> Eval {
        loop {
            match self.peek() {
                Some(b'.')
                    if self
                        .bytes
                        .get(self.at + 1)
                        .is_some_and(|&b| is_name_start(b)) =>
                {
                    self.at += 1;
                    self.identifier();
                    self.outside("a method call or property read");
                }
                Some(b'(') => {
                    self.at += 1;
                    let start = self.arguments.len();
                    self.nested(|parser| parser.arguments())?;
                    self.arguments.truncate(start);
                    self.outside("a method call or property read");
                }
                _ => return Ok(value),
            }
        }
    }

    /// A quoted string in math.js syntax (skipped: strings are outside the subset).
    fn string(&mut self) -> Result<(), Stop> {
        let quote = self.bytes[self.at];
        self.at += 1;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            if b == b'\\' {
                self.at += 1;
            } else if b == quote {
                return Ok(());
            }
        }
        Err(Stop::NotMath)
    }

    /// A number as math.js writes them: decimal with optional fraction and exponent, or `0x`, `0b`,
    /// `0o` integers.
    fn number(&mut self) -> Eval {
        let start = self.at;
        let bytes = self.bytes;
        if bytes[start] == b'0' {
            let radix = match bytes.get(start + 1) {
                Some(b'x' | b'X') => 16,
                Some(b'b' | b'B') => 2,
                Some(b'o' | b'O') => 8,
                _ => 0,
            };
            if radix != 0 {
                let digits_start = start + 2;
                let mut end = digits_start;
                while bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric()) {
                    end += 1;
                }
                let digits = self.text.get(digits_start..end).ok_or(Stop::NotMath)?;
                let value = u64::from_str_radix(digits, radix).map_err(|_| Stop::NotMath)?;
                self.at = end;
                // Integers this large are beyond what a double holds exactly; math.js rounds too.
                #[allow(clippy::cast_precision_loss)]
                return Ok(value as f64);
            }
        }
        let mut end = start;
        let digits = |end: &mut usize| {
            let from = *end;
            while bytes.get(*end).is_some_and(u8::is_ascii_digit) {
                *end += 1;
            }
            *end - from
        };
        let mut count = digits(&mut end);
        if bytes.get(end) == Some(&b'.') {
            end += 1;
            count += digits(&mut end);
        }
        if count == 0 {
            return Err(Stop::NotMath);
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let mut exponent = end + 1;
            if matches!(bytes.get(exponent), Some(b'+' | b'-')) {
                exponent += 1;
            }
            if bytes.get(exponent).is_some_and(u8::is_ascii_digit) {
                end = exponent;
                digits(&mut end);
            }
        }
        self.at = end;
        let literal = &bytes[start..end];
        // Whole numbers of up to 15 digits, the usual case, are exact without the float parser.
        if literal.len() <= 15 && literal.iter().all(u8::is_ascii_digit) {
            let whole = literal
                .iter()
                .fold(0u64, |total, digit| total * 10 + u64::from(digit - b'0'));
            // Below 10^15, so exact as a double.
            #[allow(clippy::cast_precision_loss)]
            return Ok(whole as f64);
        }
        // Every byte of a number is ASCII, so the slice is on character boundaries.
        self.text
            .get(start..end)
            .and_then(|text| text.parse().ok())
            .ok_or(Stop::NotMath)
    }

    /// A name as math.js reads one: ASCII letters, digits, `_` and `$`, not starting with a digit.
    fn identifier(&mut self) -> Option<&'t str> {
        self.blank();
        let start = self.at;
        if !self.bytes.get(start).is_some_and(|&b| is_name_start(b)) {
            return None;
        }
        let mut end = start + 1;
        while self
            .bytes
            .get(end)
            .is_some_and(|&b| is_name_start(b) || b.is_ascii_digit())
        {
            end += 1;
        }
        self.at = end;
        // Every byte of a name is ASCII, so the slice is on character boundaries.
        self.text.get(start..end)
    }

    /// A constant, a function call, or a library member (`Math.PI`, `math.pow(2, 3)`).
    fn name(&mut self) -> Eval {
        let first = self.identifier().ok_or(Stop::NotMath)?;
        let (library, name) = match first {
            "Math" | "math" if self.bytes.get(self.at) == Some(&b'.') => {
                self.at += 1;
                let member = self.identifier().ok_or(Stop::NotMath)?;
                let library = if first == "Math" {
                    Library::JavaScript
                } else {
                    Library::MathJs
                };
                (Some(library), member)
            }
            _ => (None, first),
        };
        if self.peek() == Some(b'(') {
            self.at += 1;
            let start = self.arguments.len();
            self.nested(|parser| parser.arguments())?;
            let arguments = std::mem::take(&mut self.arguments);
            let value = self.call(
                library.unwrap_or(Library::MathJs),
                name,
                &arguments[start..],
            );
            self.arguments = arguments;
            self.arguments.truncate(start);
            return self.member_chain(value);
        }
        let value = match (library, name) {
            // math.js knows `pi`, `PI`, `e` and `E`; its module object (`math.`) only the lower-case
            // ones, and JavaScript's `Math` only the upper-case ones.
            (None, "pi" | "PI")
            | (Some(Library::MathJs), "pi")
            | (Some(Library::JavaScript), "PI") => std::f64::consts::PI,
            (None, "e" | "E") | (Some(Library::MathJs), "e") | (Some(Library::JavaScript), "E") => {
                std::f64::consts::E
            }
            (None, "i" | "Infinity" | "NaN" | "tau" | "phi") | (Some(_), _) => {
                self.outside(format!("`{name}`, which is outside the evaluated subset"));
                f64::NAN
            }
            // math.js refuses a name it does not know; MVU then reads the text as YAML.
            (None, _) => return Err(Stop::NotMath),
        };
        self.member_chain(value)
    }

    /// Arguments up to the closing parenthesis, which is consumed (`(` was), pushed onto
    /// `self.arguments`.
    fn arguments(&mut self) -> Result<(), Stop> {
        if self.eat(b')') {
            return Ok(());
        }
        loop {
            let value = self.expression()?;
            self.arguments.push(value);
            if self.eat(b')') {
                return Ok(());
            }
            if !self.eat(b',') {
                return Err(Stop::NotMath);
            }
        }
    }

    /// Calls a function of the subset, or records why the call is outside it.
    fn call(&mut self, library: Library, name: &str, args: &[f64]) -> f64 {
        let result = match library {
            Library::MathJs => mathjs_call(name, args),
            Library::JavaScript => javascript_call(name, args),
        };
        match result {
            Ok(value) => value,
            Err(reason) => {
                let prefix = match library {
                    Library::MathJs => "",
                    Library::JavaScript => "Math.",
                };
                self.outside(format!("`{prefix}{name}(...)`: {reason}"));
                f64::NAN
            }
        }
    }

    /// `^` as math.js computes it for numbers.
    fn pow(&mut self, base: f64, exponent: f64) -> f64 {
        match mathjs_pow(base, exponent) {
            Ok(value) => value,
            Err(reason) => {
                self.outside(format!("`^`: {reason}"));
                f64::NAN
            }
        }
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

const COMPLEX: &str = "its result is a complex number";

/// math.js's relative and absolute tolerances (its `relTol` and `absTol` defaults).
const REL_TOL: f64 = 1e-12;
const ABS_TOL: f64 = 1e-15;

/// math.js's `nearlyEqual` for numbers.
fn nearly_equal(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return false;
    }
    if !a.is_finite() || !b.is_finite() {
        return a == b;
    }
    a == b || (a - b).abs() <= (REL_TOL * a.abs().max(b.abs())).max(ABS_TOL)
}

/// `x mod y` as math.js defines it: `x - y * floor(x / y)`, and `x` when `y` is 0.
fn modulo(x: f64, y: f64) -> f64 {
    if y == 0.0 { x } else { x - y * (x / y).floor() }
}

fn mathjs_pow(x: f64, y: f64) -> Result<f64, &'static str> {
    if y.fract() == 0.0 || x >= 0.0 || !y.is_finite() {
        Ok(js_pow(x, y))
    } else {
        Err(COMPLEX)
    }
}

/// The number of decimals of `round(x, n)`, `floor(x, n)` and the like.
fn decimals(n: Option<&f64>) -> Result<i32, &'static str> {
    match n {
        None => Ok(0),
        Some(&n) if n.fract() == 0.0 && (0.0..=15.0).contains(&n) => {
            // A whole number from 0 to 15.
            #[allow(clippy::cast_possible_truncation)]
            Ok(n as i32)
        }
        Some(_) => Err("its number of decimals must be a whole number from 0 to 15"),
    }
}

fn one(args: &[f64]) -> Result<f64, &'static str> {
    match args {
        [x] => Ok(*x),
        _ => Err("it takes one argument"),
    }
}

fn one_or_two(args: &[f64]) -> Result<(f64, Option<&f64>), &'static str> {
    match args {
        [x] => Ok((*x, None)),
        [x, n] => Ok((*x, Some(n))),
        _ => Err("it takes one or two arguments"),
    }
}

fn two(args: &[f64]) -> Result<(f64, f64), &'static str> {
    match args {
        [x, y] => Ok((*x, *y)),
        _ => Err("it takes two arguments"),
    }
}

/// A function of math.js, computed as math.js computes it for numbers.
fn mathjs_call(name: &str, args: &[f64]) -> Result<f64, Cow<'static, str>> {
    let real = |x: f64, ok: bool| if ok { Ok(x) } else { Err(COMPLEX) };
    let value = match name {
        "abs" => one(args)?.abs(),
        "sign" => js_sign(one(args)?),
        "sqrt" => {
            let x = one(args)?;
            real(x.sqrt(), x >= 0.0)?
        }
        "cbrt" => one(args)?.cbrt(),
        "exp" => one(args)?.exp(),
        "log" => match one_or_two(args)? {
            (x, None) => real(x.ln(), x >= 0.0)?,
            (x, Some(&base)) => real(x.ln() / base.ln(), x >= 0.0 && base >= 0.0)?,
        },
        "log2" => {
            let x = one(args)?;
            real(x.log2(), x >= 0.0)?
        }
        "log10" => {
            let x = one(args)?;
            real(x.log10(), x >= 0.0)?
        }
        "pow" => {
            let (x, y) = two(args)?;
            mathjs_pow(x, y)?
        }
        "round" => {
            let (x, n) = one_or_two(args)?;
            mathjs_round(x, decimals(n)?)
        }
        "floor" | "ceil" | "trunc" => {
            let (x, n) = one_or_two(args)?;
            let n = decimals(n)?;
            let direction = match name {
                "floor" => Direction::Down,
                "ceil" => Direction::Up,
                _ if x > 0.0 => Direction::Down,
                _ => Direction::Up,
            };
            mathjs_floor_ceil(x, n, direction)
        }
        "min" | "max" => {
            if args.is_empty() {
                return Err(Cow::Borrowed("it needs at least one argument"));
            }
            if args.iter().any(|x| x.is_nan()) {
                f64::NAN
            } else if name == "min" {
                args.iter().copied().fold(f64::INFINITY, f64::min)
            } else {
                args.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            }
        }
        "sin" => one(args)?.sin(),
        "cos" => one(args)?.cos(),
        "tan" => one(args)?.tan(),
        "asin" => {
            let x = one(args)?;
            real(x.asin(), (-1.0..=1.0).contains(&x))?
        }
        "acos" => {
            let x = one(args)?;
            real(x.acos(), (-1.0..=1.0).contains(&x))?
        }
        "atan" => one(args)?.atan(),
        "atan2" => {
            let (y, x) = two(args)?;
            y.atan2(x)
        }
        _ => return Err(Cow::Borrowed("outside the evaluated subset")),
    };
    Ok(value)
}

/// A function of JavaScript's `Math`: extra arguments are ignored and a missing one is NaN, as in
/// JavaScript; `round` rounds halves up, and `floor`, `ceil` and `log` have no tolerance or base.
fn javascript_call(name: &str, args: &[f64]) -> Result<f64, Cow<'static, str>> {
    let arg = |i: usize| args.get(i).copied().unwrap_or(f64::NAN);
    let x = arg(0);
    let value = match name {
        "abs" => x.abs(),
        "sign" => js_sign(x),
        "sqrt" => x.sqrt(),
        "cbrt" => x.cbrt(),
        "exp" => x.exp(),
        "log" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "pow" => js_pow(x, arg(1)),
        "round" => {
            let floor = x.floor();
            if x - floor >= 0.5 { floor + 1.0 } else { floor }
        }
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "trunc" => x.trunc(),
        "min" => args.iter().copied().fold(f64::INFINITY, |a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }),
        "max" => args.iter().copied().fold(f64::NEG_INFINITY, |a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "atan2" => x.atan2(arg(1)),
        _ => return Err(Cow::Borrowed("outside the evaluated subset")),
    };
    Ok(value)
}

/// JavaScript's `Math.sign`: the sign of zero (and NaN) is itself.
fn js_sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// JavaScript's `Math.pow`, which differs from IEEE `pow` only for a base of ±1 and an infinite or
/// NaN exponent (NaN in JavaScript, 1 in IEEE).
fn js_pow(x: f64, y: f64) -> f64 {
    if x.abs() == 1.0 && !y.is_finite() {
        f64::NAN
    } else {
        x.powf(y)
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Down,
    Up,
}

/// math.js's `round(x, n)`: round-off error is removed first by rounding to 12 decimals when that is
/// nearly equal, then halves round away from zero on the decimal digits.
fn mathjs_round(x: f64, n: i32) -> f64 {
    if n >= 12 {
        return round_decimal(x, n);
    }
    let x_epsilon = round_decimal(x, 12);
    let selected = if nearly_equal(x, x_epsilon) {
        x_epsilon
    } else {
        x
    };
    round_decimal(selected, n)
}

/// math.js's `floor(x, n)` and `ceil(x, n)`: a value nearly equal to its rounding is that rounding.
fn mathjs_floor_ceil(x: f64, n: i32, direction: Direction) -> f64 {
    let rounded = mathjs_round(x, n);
    if nearly_equal(x, rounded) {
        return rounded;
    }
    let shifted = shift_decimal(x, n);
    let whole = match direction {
        Direction::Down => shifted.floor(),
        Direction::Up => shifted.ceil(),
    };
    shift_decimal(whole, -n)
}

/// `x` with its decimal exponent moved by `n`, as math.js does it through the number's text, so that
/// no binary rounding creeps in.
fn shift_decimal(x: f64, n: i32) -> f64 {
    if n == 0 || !x.is_finite() {
        return x;
    }
    let text = format!("{x:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    format!("{mantissa}e{}", exponent + n).parse().unwrap_or(x)
}

/// `x` rounded to `n` decimals on its shortest decimal digits, halves away from zero: math.js's
/// `toFixed`, which works on the text of the number.
fn round_decimal(x: f64, n: i32) -> f64 {
    // A whole number has no decimals to round.
    if !x.is_finite() || x.fract() == 0.0 {
        return x;
    }
    // Scaled by 10^n, the shortest digits and the double differ by at most about one and a half
    // units in the last place, so unless the fraction is within two units of one half both round
    // the same way; the
    // whole result and the power are exact, and one division gives what parsing the digits gives.
    let scale = usize::try_from(n)
        .ok()
        .and_then(|n| POWERS_OF_TEN.get(n).copied());
    if let Some(scale) = scale {
        let scaled = x.abs() * scale;
        let margin = 2.0 * f64::EPSILON * scaled.max(1.0);
        if scaled < 4_503_599_627_370_496.0 && (scaled.fract() - 0.5).abs() > margin {
            return (scaled.round() / scale).copysign(x);
        }
    }
    round_decimal_by_digits(x, n)
}

/// [`round_decimal`] on the written digits, for the cases scaling cannot settle.
fn round_decimal_by_digits(x: f64, n: i32) -> f64 {
    let Some((negative, digits, exponent)) = shortest_digits(x) else {
        return x;
    };
    // The digits are d1.d2d3… × 10^exponent; keep those before decimal place n.
    let keep = exponent + 1 + n;
    if keep < 0 {
        return if negative { -0.0 } else { 0.0 };
    }
    // `keep` is non-negative and small: the digits of a double are at most 17.
    #[allow(clippy::cast_sign_loss)]
    let keep = keep as usize;
    if keep >= digits.len() {
        return x;
    }
    let mut kept: Vec<u8> = digits[..keep].to_vec();
    let mut shift = exponent;
    if digits[keep] >= b'5' {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                shift += 1;
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    if kept.is_empty() {
        return if negative { -0.0 } else { 0.0 };
    }
    let mantissa = std::str::from_utf8(&kept).unwrap_or("0");
    let exponent = shift - (i32::try_from(kept.len()).unwrap_or(0) - 1);
    let sign = if negative { "-" } else { "" };
    format!("{sign}{mantissa}e{exponent}").parse().unwrap_or(x)
}

/// The sign, the shortest decimal digits that read back as `x`, and the decimal exponent of the first.
fn shortest_digits(x: f64) -> Option<(bool, Vec<u8>, i32)> {
    let text = format!("{:e}", x.abs());
    let (mantissa, exponent) = text.split_once('e')?;
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    Some((x.is_sign_negative(), digits, exponent.parse().ok()?))
}

/// `parseFloat(x.toPrecision(12))`: MVU's rounding of every math.js result.
fn round_significant(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    // A whole number of at most 12 digits is its own rounding.
    if x.abs() < 1e12 && x.fract() == 0.0 {
        return x;
    }
    if let Some(rounded) = round_significant_by_scaling(x.abs()) {
        return rounded.copysign(x);
    }
    round_significant_exactly(x)
}

/// Powers of ten a double holds exactly.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The 12-digit rounding of a positive `m` by scaling it to a 12-digit whole part, without writing
/// digits. Scaling rounds once, by at most 2^-53 of about 1e12, so the whole part it rounds to is
/// certain unless the fraction is within 1e-3 of one half; then, and when the power of ten is not
/// exact, `None`. The rounded whole number and the power are exact, so one division (or
/// multiplication) gives the double nearest the decimal, which is what `parseFloat` gives.
fn round_significant_by_scaling(m: f64) -> Option<f64> {
    // The decimal exponent of the first digit; next to a power of ten it may be one off, which the
    // range check below catches.
    #[allow(clippy::cast_possible_truncation)]
    let exponent = m.log10().floor() as i32;
    let shift = 11 - exponent;
    let scale = *POWERS_OF_TEN.get(usize::try_from(shift.unsigned_abs()).ok()?)?;
    let scaled = if shift >= 0 { m * scale } else { m / scale };
    if !(1e11..1e12).contains(&scaled) || (scaled.fract() - 0.5).abs() < 1e-3 {
        return None;
    }
    let whole = scaled.round();
    Some(if shift >= 0 {
        whole / scale
    } else {
        whole * scale
    })
}

/// [`round_significant`] through the exact decimal digits, for the cases scaling cannot settle.
fn round_significant_exactly(x: f64) -> f64 {
    // JavaScript's toPrecision rounds the exact value, and a tie away from zero; Rust's exact
    // formatting rounds a tie to even. A tie needs the exact value to have 13 significant digits
    // ending in 5, which is checked exactly before choosing.
    let thirteen = format!("{:.12e}", x.abs());
    let (mantissa, exponent) = thirteen.split_once('e').unwrap_or((&thirteen, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: u64 = mantissa.replace('.', "").parse().unwrap_or(0);
    let tie = digits % 10 == 5 && exactly(digits, exponent - 12, x.abs());
    let twelve = if tie {
        let up = digits / 10 + 1;
        format!("{up}e{}", exponent - 11)
    } else {
        format!("{:.11e}", x.abs())
    };
    let magnitude: f64 = twelve.parse().unwrap_or(x.abs());
    if x < 0.0 { -magnitude } else { magnitude }
}

/// Whether `digits × 10^scale` is exactly the double `x`: it must read back as `x` and be a value a
/// double holds exactly (its odd part small enough, or its fraction a power of two).
fn exactly(digits: u64, scale: i32, x: f64) -> bool {
    let read: f64 = format!("{digits}e{scale}").parse().unwrap_or(f64::NAN);
    if read != x {
        return false;
    }
    if scale >= 0 {
        // digits × 10^scale = digits × 5^scale × 2^scale: exact when the odd part fits 53 bits.
        let Some(five) = 5u128.checked_pow(scale.unsigned_abs()) else {
            return false;
        };
        let Some(odd) = u128::from(digits).checked_mul(five) else {
            return false;
        };
        odd >> odd.trailing_zeros() < 1 << 53
    } else {
        // digits / 10^k is a dyadic fraction only when 5^k divides digits.
        5u64.checked_pow(scale.unsigned_abs())
            .is_some_and(|five| digits % five == 0)
    }
}

/// An integral value in the range of `i64` as an integer, anything else as a float.
fn to_json_number(x: f64) -> Number {
    // -2^63 and 2^63 are exact doubles; a double in between with no fraction converts exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.fract() == 0.0 && (-LIMIT..LIMIT).contains(&x) {
        #[allow(clippy::cast_possible_truncation)]
        return Number::from(x as i64);
    }
    Number::from_f64(x).unwrap_or_else(|| Number::from(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> f64 {
        match evaluate(text) {
            MathOutcome::Number(n) => n.as_f64().unwrap(),
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    fn outside(text: &str) -> String {
        match evaluate(text) {
            MathOutcome::Outside(reason) => reason.into_owned(),
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn the_issue_examples() {
        assert_eq!(number("Math.floor(3.9) + math.pow(2, 3)"), 11.0);
        assert_eq!(number("log(10^3, 10) * sqrt(144)"), 36.0);
        assert_eq!(number("cos(pi) + 2"), 1.0);
        assert_eq!(number("sqrt(16)"), 4.0);
        assert!(matches!(evaluate("sqrt(16)"), MathOutcome::Number(n) if n.is_i64()));
    }

    #[test]
    // 3.14159265359 is pi rounded to 12 digits as MVU rounds it, not an approximation by mistake.
    #[allow(clippy::approx_constant)]
    fn operators_follow_mathjs_precedence() {
        assert_eq!(number("-2^2"), -4.0);
        assert_eq!(number("2^3^2"), 512.0);
        assert_eq!(number("2^-1"), 0.5);
        assert_eq!(number("7 % 3"), 1.0);
        assert_eq!(number("-7 % 3"), 2.0);
        assert_eq!(number("7 % -3"), -2.0);
        assert_eq!(number("5 % 0"), 5.0);
        assert_eq!(number("0.1 + 0.2"), 0.3);
        assert_eq!(number("--5"), 5.0);
        assert_eq!(number("0x1F + 0b11"), 34.0);
        assert_eq!(number("Math.PI"), 3.14159265359);
        assert_eq!(number("math.pi + PI - pi"), 3.14159265359);
        assert_eq!(number("sin(pi)"), 1.22464679915e-16);
    }

    #[test]
    fn mathjs_and_javascript_functions_differ_where_they_do() {
        assert_eq!(number("round(-2.5)"), -3.0);
        assert_eq!(number("Math.round(-2.5)"), -2.0);
        assert_eq!(number("round(1.005, 2)"), 1.01);
        assert_eq!(number("floor(2.9999999999999996)"), 3.0);
        assert_eq!(number("Math.floor(2.9999999999999996)"), 2.0);
        assert_eq!(number("Math.log(100, 10)"), 4.60517018599);
        assert_eq!(number("log(8, 2)"), 3.0);
        assert_eq!(number("trunc(-3.7)"), -3.0);
        assert_eq!(number("floor(3.288, 2)"), 3.28);
        assert_eq!(number("ceil(3.212, 2)"), 3.22);
        assert_eq!(number("max(1, 5, 3) - min(4, 2)"), 3.0);
        assert_eq!(number("sign(-0.5) + abs(-2)"), 1.0);
    }

    #[test]
    fn outside_the_subset_is_kept_with_a_reason() {
        assert!(outside("sqrt(-4)").contains("complex"));
        assert!(outside("(2 + 3i) * (1 - 2i)").contains("implicit multiplication"));
        assert!(outside("[1, 2; 3, 4] * [5; 6]").contains("matrix"));
        assert!(outside("derivative('x^2', 'x')").contains("derivative"));
        assert!(outside("math.complex(2, 3).add(math.complex(1, -1))").contains("complex"));
        assert!(outside("1 / 0").contains("finite"));
        assert!(outside("x = 5").contains("assignment"));
        assert!(outside("5!").contains("factorial"));
        assert!(outside("10 + 5%").contains("percentage"));
        assert!(outside("2pi").contains("implicit"));
        assert!(outside("Math.random()").contains("subset"));
        assert!(outside("round(2.5, 1.5)").contains("decimals"));
        assert!(outside("10:30").contains("range"));
        assert!(outside("math.PI").contains("subset"));
    }

    #[test]
    fn unknown_names_and_prose_are_not_math() {
        for text in [
            "[x, y]",
            "hello world",
            "x + 1",
            "5 cm",
            "True",
            "早餐时间",
            "foo(bar)",
            "a, b",
        ] {
            assert_eq!(evaluate(text), MathOutcome::NotMath, "{text}");
        }
    }

    #[test]
    fn hostile_input_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(outside(&deep).contains("nested deeper"));
        let tower = format!("{}2", "2^".repeat(1000));
        assert!(outside(&tower).contains("nested deeper"));
        let long = format!("{}1", "(".repeat(1 << 20));
        assert!(outside(&long).contains("longer than"));
        let long_tower = format!("{}2", "2^".repeat(1 << 19));
        assert!(outside(&long_tower).contains("longer than"));
        assert!(outside(&format!("{}1", "-".repeat(100))).contains("nested deeper"));
    }

    #[test]
    fn rounding_to_twelve_digits_breaks_ties_away_from_zero() {
        assert_eq!(round_significant(100000000000.5), 100000000001.0);
        assert_eq!(round_significant(-100000000000.5), -100000000001.0);
        assert_eq!(round_significant(35.99999999999999), 36.0);
        assert_eq!(round_significant(0.1 + 0.2), 0.3);
        assert_eq!(round_significant(1.2246467991473532e-16), 1.22464679915e-16);
        assert_eq!(round_significant(1234567890123.0), 1234567890120.0);
        assert_eq!(round_significant(2.0 / 3.0), 0.666666666667);
        assert_eq!(round_significant(-1e300 / 3.0), -3.33333333333e299);
    }

    #[test]
    fn decimal_rounding_by_scaling_agrees_with_the_digits() {
        let mut x: f64 = 1.0e-9;
        while x < 1.0e9 {
            for value in [x, -x, x * 1.005, x / 7.0, x * 2.675] {
                for n in [0, 1, 2, 5, 12, 15] {
                    assert_eq!(
                        round_decimal(value, n).to_bits(),
                        round_decimal_by_digits(value, n).to_bits(),
                        "{value:e} to {n}"
                    );
                }
            }
            x *= 1.61;
        }
    }

    #[test]
    fn scaling_agrees_with_the_exact_digits() {
        // A deterministic spread of doubles of every magnitude, with ties and near-ties.
        let mut x: f64 = 1.0e-30;
        while x < 1.0e30 {
            for value in [x, x * 1.000000000005, x / 3.0, x * 0.123456789012345] {
                assert_eq!(
                    round_significant_by_scaling(value)
                        .unwrap_or_else(|| round_significant_exactly(value)),
                    round_significant_exactly(value),
                    "{value:e}"
                );
            }
            x *= 1.37;
        }
    }
}
