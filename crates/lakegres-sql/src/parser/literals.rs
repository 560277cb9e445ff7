//! How a statement's string literals are read: with Databricks' backslash
//! escapes (`'\\d+'` is `\d+`, `'\t'` a tab), or as Postgres reads them
//! with `standard_conforming_strings` on (a backslash is a backslash).
//!
//! The session's `standard_conforming_strings` chooses; it is `off` by
//! default, so Databricks code runs as written and drivers, which quote
//! parameters by that setting, double their backslashes.

use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, TokenizerError};

use super::LakegresDialect;

/// How `'…'` literals are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StringLiterals {
    /// Databricks: backslash escapes (`standard_conforming_strings = off`).
    #[default]
    Escaped,
    /// Postgres: a backslash is itself (`standard_conforming_strings = on`);
    /// also Lakegres' own SQL and the text of stored views.
    Standard,
}

impl StringLiterals {
    /// From the value of `standard_conforming_strings`.
    pub fn from_setting(standard_conforming_strings: &str) -> Self {
        match standard_conforming_strings
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "on" | "true" | "yes" | "1" => Self::Standard,
            _ => Self::Escaped,
        }
    }
}

/// The tokens of `sql` as the parser reads them.
pub(crate) fn tokenize(
    sql: &str,
    strings: StringLiterals,
) -> Result<Vec<TokenWithSpan>, TokenizerError> {
    let tokens = match strings {
        StringLiterals::Standard => {
            Tokenizer::new(&LakegresDialect::default(), sql).tokenize_with_location()?
        }
        StringLiterals::Escaped => {
            // The tokenizer finds where each literal ends (`\'` does not end
            // one) and keeps its text as written; Spark's rules read it.
            let dialect = LakegresDialect::with_backslash_escapes();
            let tokens = Tokenizer::new(&dialect, sql)
                .with_unescape(false)
                .tokenize_with_location()?;
            read_escapes(tokens)
        }
    };
    Ok(spark_literal_forms(tokens))
}

/// Spark's literal forms the parser does not read: the unquoted interval
/// of several units, `INTERVAL 1 YEAR 2 MONTHS` (or `-1 DAY 3 HOURS`), as
/// the quoted one, `INTERVAL '1 YEAR 2 MONTHS'`; `TIMESTAMP_LTZ '…'` and
/// `TIMESTAMP_NTZ '…'` (or `"…"`) as casts of the text.
fn spark_literal_forms(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_interval = |t: &Token| {
        matches!(t, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("interval"))
    };
    let is_zoned = |t: &Token| {
        matches!(t, Token::Word(w) if w.quote_style.is_none()
            && (w.value.eq_ignore_ascii_case("timestamp_ltz")
                || w.value.eq_ignore_ascii_case("timestamp_ntz")))
    };
    if !tokens
        .iter()
        .any(|t| is_interval(&t.token) || is_zoned(&t.token))
    {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if let Some((cast, end)) = zoned_timestamp_literal(&tokens, i) {
            out.extend(cast);
            i = end;
            continue;
        }
        if let Some((type_name, end)) = interval_type_with_fields(&tokens, i) {
            out.push(tokens[i].clone());
            out.push(type_name);
            i = end;
            continue;
        }
        out.push(tokens[i].clone());
        if is_interval(&tokens[i].token) {
            if let Some((text, end)) = unit_pairs(&tokens, i + 1) {
                let span = tokens[i + 1].span.union(&tokens[end - 1].span);
                out.push(TokenWithSpan::new(Token::SingleQuotedString(text), span));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// At `at`, `AS INTERVAL DAY TO SECOND` (or `::`, or one field): the type
/// as the one word the parser reads (`lakegres_interval_day_second`, which
/// lakegres-functions' rewrite plans), and the index after it.
fn interval_type_with_fields(
    tokens: &[TokenWithSpan],
    at: usize,
) -> Option<(TokenWithSpan, usize)> {
    const FIELDS: &[&str] = &["year", "month", "day", "hour", "minute", "second"];
    let word = |k: usize| match &tokens.get(k)?.token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    let blanks = |mut k: usize| {
        while tokens
            .get(k)
            .is_some_and(|t| matches!(t.token, Token::Whitespace(_)))
        {
            k += 1;
        }
        k
    };
    let is_cast =
        matches!(tokens.get(at)?.token, Token::DoubleColon) || word(at).is_some_and(|w| w == "as");
    if !is_cast {
        return None;
    }
    let k = blanks(at + 1);
    if word(k)? != "interval" {
        return None;
    }
    let k = blanks(k + 1);
    let from = word(k).filter(|w| FIELDS.contains(&w.as_str()))?;
    let mut end = k + 1;
    let mut to = from.clone();
    let after = blanks(end);
    if word(after).is_some_and(|w| w == "to") {
        let k = blanks(after + 1);
        to = word(k).filter(|w| FIELDS.contains(&w.as_str()))?;
        end = k + 1;
    }
    let span = tokens[at].span.union(&tokens[end - 1].span);
    let name = Token::make_word(&format!("lakegres_interval_{from}_{to}"), None);
    Some((TokenWithSpan::new(name, span), end))
}

/// At `at`, `TIMESTAMP_LTZ '…'` or `TIMESTAMP_NTZ '…'`: the tokens of
/// `CAST('…' AS TIMESTAMP)` (`TIMESTAMP_NTZ`), and the index after it.
fn zoned_timestamp_literal(
    tokens: &[TokenWithSpan],
    at: usize,
) -> Option<(Vec<TokenWithSpan>, usize)> {
    let Token::Word(word) = &tokens.get(at)?.token else {
        return None;
    };
    let target = match word.value.to_ascii_lowercase().as_str() {
        _ if word.quote_style.is_some() => return None,
        "timestamp_ltz" => "TIMESTAMP",
        "timestamp_ntz" => "TIMESTAMP_NTZ",
        _ => return None,
    };
    let mut k = at + 1;
    while matches!(tokens.get(k)?.token, Token::Whitespace(_)) {
        k += 1;
    }
    let text = match &tokens.get(k)?.token {
        Token::SingleQuotedString(s) => s.clone(),
        Token::Word(w) if w.quote_style == Some('"') => w.value.clone(),
        Token::DoubleQuotedString(s) => s.clone(),
        _ => return None,
    };
    let span = tokens[at].span.union(&tokens[k].span);
    let cast = [
        Token::make_keyword("CAST"),
        Token::LParen,
        Token::SingleQuotedString(text),
        Token::make_keyword("AS"),
        Token::make_keyword(target),
        Token::RParen,
    ]
    .into_iter()
    .map(|t| TokenWithSpan::new(t, span))
    .collect();
    Some((cast, k + 1))
}

/// From `at`: two or more `[-|+]number unit` pairs, as one text, and the
/// index after them.
fn unit_pairs(tokens: &[TokenWithSpan], at: usize) -> Option<(String, usize)> {
    const UNITS: &[&str] = &[
        "year",
        "month",
        "week",
        "day",
        "hour",
        "minute",
        "second",
        "millisecond",
        "microsecond",
    ];
    let blanks = |mut k: usize| {
        while tokens
            .get(k)
            .is_some_and(|t| matches!(t.token, Token::Whitespace(_)))
        {
            k += 1;
        }
        k
    };
    let mut pairs = Vec::new();
    let mut end = at;
    loop {
        let mut k = blanks(end);
        let mut sign = "";
        match tokens.get(k).map(|t| &t.token) {
            Some(Token::Minus) => {
                sign = "-";
                k = blanks(k + 1);
            }
            Some(Token::Plus) => k = blanks(k + 1),
            _ => {}
        }
        let Some(Token::Number(number, _)) = tokens.get(k).map(|t| &t.token) else {
            break;
        };
        k = blanks(k + 1);
        let Some(Token::Word(unit)) = tokens.get(k).map(|t| &t.token) else {
            break;
        };
        let singular = unit.value.to_ascii_lowercase();
        let singular = singular.strip_suffix('s').unwrap_or(&singular);
        if unit.quote_style.is_some() || !UNITS.contains(&singular) {
            break;
        }
        pairs.push(format!("{sign}{number} {}", unit.value));
        end = k + 1;
    }
    (pairs.len() >= 2).then(|| (pairs.join(" "), end))
}

/// Reads the literals and quoted names of tokens kept as written.
fn read_escapes(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for t in tokens {
        let token = match t.token {
            Token::SingleQuotedString(s) => {
                // `r'…'`: Spark's raw literal, its text as written.
                let raw = out.last().is_some_and(|prev| {
                    matches!(&prev.token, Token::Word(w)
                        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("r"))
                        && prev.span.end == t.span.start
                });
                if raw {
                    out.pop();
                    Token::SingleQuotedString(s)
                } else {
                    Token::SingleQuotedString(unescape(&s))
                }
            }
            Token::NationalStringLiteral(s) => Token::NationalStringLiteral(unescape(&s)),
            Token::Word(mut w) => {
                if let Some(q) = w.quote_style {
                    let doubled: String = [q, q].iter().collect();
                    if w.value.contains(&doubled) {
                        w.value = w.value.replace(&doubled, &q.to_string());
                    }
                }
                Token::Word(w)
            }
            other => other,
        };
        out.push(TokenWithSpan::new(token, t.span));
    }
    out
}

/// A literal's text as written (between its quotes) read with Spark's
/// rules (`SparkParserUtils.unescapeSQLString`), and `''` as one quote.
fn unescape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' && chars.get(i + 1) == Some(&'\'') {
            out.push('\'');
            i += 2;
            continue;
        }
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&next) = chars.get(i + 1) else {
            // A trailing backslash stays.
            out.push('\\');
            break;
        };
        // `\uXXXX`: a UTF-16 unit (a surrogate pair is two of them).
        if next == 'u' {
            if let Some(unit) = hex_at(&chars, i + 2, 4) {
                let mut units = vec![unit as u16];
                let mut end = i + 6;
                if (0xD800..0xDC00).contains(&unit)
                    && chars.get(end) == Some(&'\\')
                    && chars.get(end + 1) == Some(&'u')
                {
                    if let Some(low) = hex_at(&chars, end + 2, 4) {
                        units.push(low as u16);
                        end += 6;
                    }
                }
                out.extend(char::decode_utf16(units).map(|r| r.unwrap_or('\u{FFFD}')));
                i = end;
                continue;
            }
        }
        // `\U` and eight hex digits: a code point.
        if next == 'U' {
            if let Some(code) = hex_at(&chars, i + 2, 8) {
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                i += 10;
                continue;
            }
        }
        // `\000` to `\177`: an octal code.
        if let (Some(a @ '0'..='1'), Some(b @ '0'..='7'), Some(c @ '0'..='7')) =
            (chars.get(i + 1), chars.get(i + 2), chars.get(i + 3))
        {
            let code = (*a as u32 - 48) * 64 + (*b as u32 - 48) * 8 + (*c as u32 - 48);
            out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            i += 4;
            continue;
        }
        match next {
            '0' => out.push('\0'),
            'b' => out.push('\u{8}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'Z' => out.push('\u{1A}'),
            // LIKE patterns keep these escaped.
            '%' => out.push_str("\\%"),
            '_' => out.push_str("\\_"),
            other => out.push(other),
        }
        i += 2;
    }
    out
}

/// The number written in `len` hex digits at `at`, if they are there.
fn hex_at(chars: &[char], at: usize, len: usize) -> Option<u32> {
    let digits = chars.get(at..at + len)?;
    digits
        .iter()
        .try_fold(0u32, |n, c| Some(n * 16 + c.to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_escapes() {
        assert_eq!(unescape(r"\\d+"), r"\d+");
        assert_eq!(unescape(r"a\tb\nc"), "a\tb\nc");
        assert_eq!(unescape(r"it\'s"), "it's");
        assert_eq!(unescape("it''s"), "it's");
        assert_eq!(unescape(r#"\""#), "\"");
        assert_eq!(unescape(r"\u00e9\U0001F600"), "é😀");
        assert_eq!(unescape(r"\ud83d\ude00"), "😀");
        assert_eq!(unescape(r"\101\0"), "A\0");
        assert_eq!(unescape(r"100\%"), r"100\%");
        assert_eq!(unescape(r"\q\."), "q.");
        assert_eq!(unescape(r"end\"), r"end\");
    }

    #[test]
    fn raw_literals_and_quoted_names() {
        let texts = |sql: &str, strings| -> Vec<String> {
            tokenize(sql, strings)
                .unwrap()
                .into_iter()
                .filter_map(|t| match t.token {
                    Token::SingleQuotedString(s) => Some(s),
                    Token::Word(w) if w.quote_style.is_some() => Some(w.value),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            texts(
                r#"SELECT r'\d', '\\d', "a""b", `c``d`"#,
                StringLiterals::Escaped
            ),
            [r"\d", r"\d", r#"a"b"#, "c`d"]
        );
        assert_eq!(
            texts(r#"SELECT '\d', "a""b""#, StringLiterals::Standard),
            [r"\d", r#"a"b"#]
        );
        // `\'` does not end the literal.
        assert_eq!(texts(r"SELECT 'a\'b'", StringLiterals::Escaped), ["a'b"]);
        // E'…' reads Postgres' escapes either way.
        assert_eq!(
            texts(r"SELECT E'a\tb'", StringLiterals::Escaped),
            Vec::<String>::new()
        );
    }
}
