//! Spark datetime patterns (`yyyy-MM-dd HH:mm:ss.SSS`, `MMM`, `EEE`, `a`,
//! `XXX` …), parsed once into fields, then used to format and to parse
//! values, as Databricks' `date_format`, `to_date`, `to_timestamp`,
//! `unix_timestamp` and `from_unixtime` do
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-datetime-pattern.html>).

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::error::FunctionError;

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Field {
    Literal(String),
    Era,
    Year(usize),
    WeekYear(usize),
    Month(usize),
    Day(usize),
    DayOfYear(usize),
    Quarter(usize),
    DayOfWeekName(usize),
    DayOfWeekNumber(usize),
    AmPm,
    /// `H`: 0-23.
    Hour24(usize),
    /// `h`: 1-12.
    Hour12(usize),
    /// `K`: 0-11.
    Hour11(usize),
    /// `k`: 1-24.
    HourFrom1(usize),
    Minute(usize),
    Second(usize),
    Fraction(usize),
    /// `VV`.
    ZoneId,
    /// `z`…`zzzz`.
    ZoneName(usize),
    /// `X` (Z for zero) and `x`.
    Offset {
        count: usize,
        z_for_zero: bool,
    },
    /// `Z`.
    OffsetZ(usize),
    /// `O`.
    OffsetO(usize),
    /// `[ … ]`: optional when parsing, written when formatting.
    Optional(Vec<Field>),
    /// A Postgres month or day name, in the case the template gives.
    Name {
        of: NameOf,
        abbreviated: bool,
        case: Case,
        /// Blank-padded to 9 characters (Postgres' default, off with FM).
        padded: bool,
    },
    /// Postgres' `AM`, `am`, `A.M.`, `a.m.` (and the PM forms).
    Meridiem {
        upper: bool,
        dots: bool,
    },
    /// A Postgres number that Spark patterns do not have, zero-padded to
    /// `width` (0: as it is).
    Number {
        of: Numbered,
        width: usize,
    },
    /// Postgres' `TH`/`th` after a number: its ordinal suffix.
    Ordinal {
        upper: bool,
    },
    /// Parsing only: up to `max` digits (at least one) into `into`.
    Digits {
        into: Part,
        max: usize,
    },
}

/// Which name a [`Field::Name`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NameOf {
    Month,
    Day,
}

/// The case of a written name: `MONTH`, `Month`, `month`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Case {
    Upper,
    Title,
    Lower,
}

/// The numbers of Postgres templates that Spark's fields do not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Numbered {
    /// `YYY`, `YY`, `Y`: the last n digits of the year.
    YearDigits(u32),
    /// `Y,YYY`.
    YearWithComma,
    /// `IYYY` … `I`: the ISO week-numbering year, its last n digits.
    IsoYear(u32),
    /// `IW`.
    IsoWeek,
    /// `ID`: Monday 1 … Sunday 7.
    IsoDayOfWeek,
    /// `IDDD`: day of the ISO year.
    IsoDayOfYear,
    /// `D`: Sunday 1 … Saturday 7.
    DayOfWeek,
    /// `W`: week of the month, from its first day.
    WeekOfMonth,
    /// `WW`: week of the year, from January 1.
    WeekOfYear,
    /// `CC`.
    Century,
    /// `Q`.
    Quarter,
    /// `J`: the Julian day.
    Julian,
    /// `SSSS`, `SSSSS`: seconds past midnight.
    SecondsOfDay,
    /// `RM`, `rm`: the month in Roman numerals.
    RomanMonth { upper: bool },
    /// `TZH`: the offset's signed hours.
    OffsetHours,
    /// `TZM`: the offset's minutes.
    OffsetMinutes,
    /// `OF`: `+02`, `+05:30`.
    Offset,
}

/// Where a parsed [`Field::Digits`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Year,
    Month,
    Day,
    DayOfYear,
    Hour24,
    Hour12,
    Minute,
    Second,
    /// Fraction digits of a second.
    Fraction,
}

/// A parsed Spark datetime pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    text: String,
    fields: Vec<Field>,
    /// How a Postgres template reads text, where that differs from how it
    /// writes it (numbers of fewer digits, names in any case).
    parse_fields: Option<Vec<Field>>,
    /// Whether formatting shows the value's offset or zone.
    shows_offset: bool,
}

/// The local date and time a value shows, with the zone it is shown in.
pub(crate) struct Shown<'a> {
    pub local: NaiveDateTime,
    /// Seconds east of UTC.
    pub offset: i32,
    pub zone: &'a str,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

impl Pattern {
    /// Reads a pattern; an unknown letter or a bad count is
    /// `INVALID_DATETIME_PATTERN`.
    ///
    /// A Postgres template (`YYYY-MM-DD HH24:MI:SS`, as Postgres clients and
    /// BI tools send) is read as Postgres reads it; see [`super::template`]
    /// for which patterns are templates.
    pub fn new(text: &str) -> Result<Self, FunctionError> {
        let chars: Vec<char> = text.chars().collect();
        let mut pos = 0;
        let spark = if super::template::is_template(text) {
            None
        } else {
            match parse_fields(text, &chars, &mut pos, false) {
                Ok(fields) => Some(fields),
                // What Spark refuses may still be a Postgres template.
                Err(e) => match super::template::parse(text) {
                    Ok(t) if t.upper_keyword => None,
                    _ => return Err(e),
                },
            }
        };
        let (fields, parse_fields) = match spark {
            Some(fields) => (fields, None),
            None => {
                let template = super::template::parse(text)?;
                (template.format, Some(template.parse))
            }
        };
        Ok(Self {
            text: text.to_string(),
            shows_offset: shows_offset(&fields),
            fields,
            parse_fields,
        })
    }

    /// Whether formatting shows the value's offset or zone.
    pub fn shows_offset(&self) -> bool {
        self.shows_offset
    }

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Writes `value` as the pattern shows it.
    pub fn format(&self, value: &Shown, out: &mut String) {
        format_fields(&self.fields, value, out)
    }

    /// Reads `text` as the pattern says: the local date and time, and the
    /// offset in seconds if the text names one. The whole text must match.
    pub fn parse(&self, text: &str) -> Result<(NaiveDateTime, Option<i32>), FunctionError> {
        let bad = || FunctionError::CannotParseTimestamp {
            value: text.to_string(),
            pattern: self.text.clone(),
        };
        let mut parts = Parts::default();
        let mut input = Input {
            bytes: text.as_bytes(),
            pos: 0,
        };
        let fields = self.parse_fields.as_ref().unwrap_or(&self.fields);
        if !parse_with(fields, &mut input, &mut parts) || input.pos != input.bytes.len() {
            return Err(bad());
        }
        parts.resolve().ok_or_else(bad)
    }
}

/// Whether any of `fields` shows an offset or zone.
fn shows_offset(fields: &[Field]) -> bool {
    fields.iter().any(|f| match f {
        Field::ZoneId
        | Field::ZoneName(_)
        | Field::Offset { .. }
        | Field::OffsetZ(_)
        | Field::OffsetO(_) => true,
        Field::Number { of, .. } => matches!(
            of,
            Numbered::Offset | Numbered::OffsetHours | Numbered::OffsetMinutes
        ),
        Field::Optional(inner) => shows_offset(inner),
        _ => false,
    })
}

fn parse_fields(
    text: &str,
    chars: &[char],
    pos: &mut usize,
    nested: bool,
) -> Result<Vec<Field>, FunctionError> {
    let invalid = |reason: &str| FunctionError::InvalidDatetimePattern {
        pattern: text.to_string(),
        reason: reason.to_string(),
    };
    let mut fields = Vec::new();
    while *pos < chars.len() {
        let c = chars[*pos];
        if c == '\'' {
            // Quoted text; '' is one quote.
            *pos += 1;
            let mut literal = String::new();
            if chars.get(*pos) == Some(&'\'') {
                literal.push('\'');
                *pos += 1;
            } else {
                loop {
                    match chars.get(*pos) {
                        None => return Err(invalid("unterminated quote")),
                        Some('\'') if chars.get(*pos + 1) == Some(&'\'') => {
                            literal.push('\'');
                            *pos += 2;
                        }
                        Some('\'') => {
                            *pos += 1;
                            break;
                        }
                        Some(ch) => {
                            literal.push(*ch);
                            *pos += 1;
                        }
                    }
                }
            }
            push_literal(&mut fields, &literal);
            continue;
        }
        if c == '[' {
            *pos += 1;
            let inner = parse_fields(text, chars, pos, true)?;
            fields.push(Field::Optional(inner));
            continue;
        }
        if c == ']' {
            if nested {
                *pos += 1;
                return Ok(fields);
            }
            return Err(invalid("unmatched ']'"));
        }
        if !c.is_ascii_alphabetic() {
            push_literal(&mut fields, &c.to_string());
            *pos += 1;
            continue;
        }
        let start = *pos;
        while *pos < chars.len() && chars[*pos] == c {
            *pos += 1;
        }
        let n = *pos - start;
        let too_many = |max: usize| -> Result<(), FunctionError> {
            if n > max {
                Err(invalid(&format!("too many pattern letters: {c}")))
            } else {
                Ok(())
            }
        };
        let field = match c {
            'G' => Field::Era,
            'y' | 'u' => Field::Year(n),
            'Y' => Field::WeekYear(n),
            'M' | 'L' => {
                too_many(4)?;
                Field::Month(n)
            }
            'd' => {
                too_many(2)?;
                Field::Day(n)
            }
            'D' => {
                too_many(3)?;
                Field::DayOfYear(n)
            }
            'Q' | 'q' => {
                too_many(4)?;
                Field::Quarter(n)
            }
            'E' => {
                too_many(4)?;
                Field::DayOfWeekName(n)
            }
            'e' | 'c' => {
                too_many(2)?;
                Field::DayOfWeekNumber(n)
            }
            'a' => {
                too_many(1)?;
                Field::AmPm
            }
            'H' => {
                too_many(2)?;
                Field::Hour24(n)
            }
            'h' => {
                too_many(2)?;
                Field::Hour12(n)
            }
            'K' => {
                too_many(2)?;
                Field::Hour11(n)
            }
            'k' => {
                too_many(2)?;
                Field::HourFrom1(n)
            }
            'm' => {
                too_many(2)?;
                Field::Minute(n)
            }
            's' => {
                too_many(2)?;
                Field::Second(n)
            }
            'S' => {
                too_many(9)?;
                Field::Fraction(n)
            }
            'V' => {
                if n != 2 {
                    return Err(invalid("pattern letter count must be 2: V"));
                }
                Field::ZoneId
            }
            'z' => {
                too_many(4)?;
                Field::ZoneName(n)
            }
            'X' | 'x' => {
                too_many(5)?;
                Field::Offset {
                    count: n,
                    z_for_zero: c == 'X',
                }
            }
            'Z' => {
                too_many(5)?;
                Field::OffsetZ(n)
            }
            'O' => {
                if n != 1 && n != 4 {
                    return Err(invalid("pattern letter count must be 1 or 4: O"));
                }
                Field::OffsetO(n)
            }
            _ => return Err(invalid(&format!("illegal pattern character '{c}'"))),
        };
        fields.push(field);
    }
    if nested {
        return Err(invalid("unmatched '['"));
    }
    Ok(fields)
}

fn push_literal(fields: &mut Vec<Field>, text: &str) {
    if let Some(Field::Literal(last)) = fields.last_mut() {
        last.push_str(text);
    } else {
        fields.push(Field::Literal(text.to_string()));
    }
}

pub(super) fn pad(out: &mut String, value: i64, width: usize) {
    // By hand rather than with `write!`: this runs for every field of every
    // formatted row.
    if value < 0 {
        out.push('-');
    }
    let mut digits = [0u8; 20];
    let mut n = value.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in len..width {
        out.push('0');
    }
    for d in digits[..len].iter().rev() {
        out.push(*d as char);
    }
}

fn format_fields(fields: &[Field], v: &Shown, out: &mut String) {
    let t = &v.local;
    for field in fields {
        match field {
            Field::Literal(s) => out.push_str(s),
            Field::Era => out.push_str(if t.year() > 0 { "AD" } else { "BC" }),
            Field::Year(n) | Field::WeekYear(n) => {
                let year = match field {
                    Field::WeekYear(_) => t.iso_week().year(),
                    _ => t.year(),
                } as i64;
                if *n == 2 {
                    pad(out, year.rem_euclid(100), 2);
                } else {
                    pad(out, year, *n);
                }
            }
            Field::Month(n) => {
                let m = t.month() as usize;
                match n {
                    1 | 2 => pad(out, m as i64, *n),
                    3 => out.push_str(&MONTHS[m - 1][..3]),
                    _ => out.push_str(MONTHS[m - 1]),
                }
            }
            Field::Day(n) => pad(out, t.day() as i64, *n),
            Field::DayOfYear(n) => pad(out, t.ordinal() as i64, *n),
            Field::Quarter(n) => {
                let q = (t.month() as i64 - 1) / 3 + 1;
                match n {
                    1 | 2 => pad(out, q, *n),
                    3 => {
                        out.push('Q');
                        pad(out, q, 1)
                    }
                    _ => out.push_str(
                        ["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"]
                            [(q - 1) as usize],
                    ),
                }
            }
            Field::DayOfWeekName(n) => {
                let d = DAYS[t.weekday().num_days_from_monday() as usize];
                out.push_str(if *n >= 4 { d } else { &d[..3] })
            }
            Field::DayOfWeekNumber(n) => {
                // Sunday first, as the default (US) locale counts.
                pad(out, t.weekday().num_days_from_sunday() as i64 + 1, *n)
            }
            Field::AmPm => out.push_str(if t.hour() < 12 { "AM" } else { "PM" }),
            Field::Hour24(n) => pad(out, t.hour() as i64, *n),
            Field::Hour12(n) => {
                let h = t.hour() % 12;
                pad(out, if h == 0 { 12 } else { h } as i64, *n)
            }
            Field::Hour11(n) => pad(out, (t.hour() % 12) as i64, *n),
            Field::HourFrom1(n) => pad(out, if t.hour() == 0 { 24 } else { t.hour() } as i64, *n),
            Field::Minute(n) => pad(out, t.minute() as i64, *n),
            Field::Second(n) => pad(out, t.second() as i64, *n),
            Field::Fraction(n) => {
                let nanos = format!("{:09}", t.nanosecond() % 1_000_000_000);
                out.push_str(&nanos[..*n]);
            }
            Field::ZoneId => out.push_str(v.zone),
            Field::ZoneName(n) => {
                if *n >= 4 {
                    out.push_str(long_zone_name(v.zone));
                } else {
                    out.push_str(short_zone_name(v.zone, v.offset));
                }
            }
            Field::Offset { count, z_for_zero } => {
                if *z_for_zero && v.offset == 0 {
                    out.push('Z');
                } else {
                    write_offset(out, v.offset, *count);
                }
            }
            Field::OffsetZ(n) => match n {
                1..=3 => write_offset(out, v.offset, 2),
                4 => {
                    if v.offset == 0 {
                        out.push_str("GMT");
                    } else {
                        out.push_str("GMT");
                        write_offset(out, v.offset, 3);
                    }
                }
                _ => {
                    if v.offset == 0 {
                        out.push('Z');
                    } else {
                        write_offset(out, v.offset, 3);
                    }
                }
            },
            Field::OffsetO(n) => {
                out.push_str("GMT");
                if v.offset != 0 {
                    if *n == 4 {
                        write_offset(out, v.offset, 3);
                    } else {
                        let sign = if v.offset < 0 { '-' } else { '+' };
                        let s = v.offset.abs();
                        out.push(sign);
                        out.push_str(&(s / 3600).to_string());
                        if s % 3600 != 0 {
                            out.push(':');
                            pad(out, ((s % 3600) / 60) as i64, 2);
                        }
                    }
                }
            }
            Field::Optional(inner) => format_fields(inner, v, out),
            Field::Name {
                of,
                abbreviated,
                case,
                padded,
            } => {
                let name = match of {
                    NameOf::Month => MONTHS[t.month0() as usize],
                    NameOf::Day => DAYS[t.weekday().num_days_from_monday() as usize],
                };
                let name = if *abbreviated { &name[..3] } else { name };
                match case {
                    Case::Upper => out.push_str(&name.to_ascii_uppercase()),
                    Case::Title => out.push_str(name),
                    Case::Lower => out.push_str(&name.to_ascii_lowercase()),
                }
                if *padded && !*abbreviated {
                    out.extend(std::iter::repeat_n(' ', 9 - name.len()));
                }
            }
            Field::Meridiem { upper, dots } => {
                let text = match (t.hour() < 12, dots) {
                    (true, false) => "am",
                    (false, false) => "pm",
                    (true, true) => "a.m.",
                    (false, true) => "p.m.",
                };
                if *upper {
                    out.push_str(&text.to_ascii_uppercase())
                } else {
                    out.push_str(text)
                }
            }
            Field::Number { of, width } => super::template::format_number(*of, *width, v, out),
            Field::Ordinal { upper } => super::template::format_ordinal(*upper, out),
            // Parsing only.
            Field::Digits { .. } => {}
        }
    }
}

/// `+08` (1), `+0800` (2), `+08:00` (3), `+0800[ss]` (4), `+08:00[:ss]` (5).
pub(super) fn write_offset(out: &mut String, offset: i32, count: usize) {
    let sign = if offset < 0 { '-' } else { '+' };
    let s = offset.abs();
    let (h, m, sec) = (s / 3600, (s % 3600) / 60, s % 60);
    out.push(sign);
    pad(out, h as i64, 2);
    match count {
        1 => {
            if m != 0 {
                pad(out, m as i64, 2);
            }
        }
        2 | 4 => {
            pad(out, m as i64, 2);
            if count == 4 && sec != 0 {
                pad(out, sec as i64, 2);
            }
        }
        _ => {
            out.push(':');
            pad(out, m as i64, 2);
            if count == 5 && sec != 0 {
                out.push(':');
                pad(out, sec as i64, 2);
            }
        }
    }
}

fn short_zone_name(zone: &str, offset: i32) -> &str {
    match zone {
        "UTC" | "Etc/UTC" | "Z" | "+00:00" => "UTC",
        _ if offset == 0 && zone.starts_with("Etc/") => "GMT",
        _ => zone,
    }
}

fn long_zone_name(zone: &str) -> &str {
    match zone {
        "UTC" | "Etc/UTC" | "Z" | "+00:00" => "Coordinated Universal Time",
        other => other,
    }
}

/// What a parse found.
#[derive(Default)]
struct Parts {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    hour: Option<u32>,
    hour12: Option<u32>,
    pm: Option<bool>,
    minute: Option<u32>,
    second: Option<u32>,
    nanos: Option<u32>,
    offset: Option<i32>,
}

impl Parts {
    fn resolve(&self) -> Option<(NaiveDateTime, Option<i32>)> {
        let year = self.year.unwrap_or(1970);
        let date = match (self.day_of_year, self.month, self.day) {
            (Some(doy), None, None) => NaiveDate::from_yo_opt(year, doy)?,
            _ => NaiveDate::from_ymd_opt(year, self.month.unwrap_or(1), self.day.unwrap_or(1))?,
        };
        let hour = match (self.hour, self.hour12, self.pm) {
            (Some(h), _, _) => h,
            (None, Some(h), pm) => h % 12 + if pm == Some(true) { 12 } else { 0 },
            (None, None, Some(true)) => 12,
            _ => 0,
        };
        let time = NaiveTime::from_hms_nano_opt(
            hour,
            self.minute.unwrap_or(0),
            self.second.unwrap_or(0),
            self.nanos.unwrap_or(0),
        )?;
        Some((date.and_time(time), self.offset))
    }
}

struct Input<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Input<'_> {
    /// Between `min` and `max` digits.
    fn digits(&mut self, min: usize, max: usize) -> Option<(i64, usize)> {
        let start = self.pos;
        let mut value: i64 = 0;
        while self.pos < self.bytes.len()
            && self.pos - start < max
            && self.bytes[self.pos].is_ascii_digit()
        {
            value = value * 10 + (self.bytes[self.pos] - b'0') as i64;
            self.pos += 1;
        }
        let n = self.pos - start;
        if n < min {
            self.pos = start;
            return None;
        }
        Some((value, n))
    }

    /// A number for a field written with `count` letters: exactly `count`
    /// digits for 2, one or two for 1.
    fn number(&mut self, count: usize, max: usize) -> Option<u32> {
        let (v, _) = if count == 1 {
            self.digits(1, max)?
        } else {
            self.digits(count, count.max(2))?
        };
        u32::try_from(v).ok()
    }

    /// One of `words` (case-insensitive); its index.
    fn word(&mut self, words: &[&str]) -> Option<usize> {
        let rest = &self.bytes[self.pos..];
        // The longest match first (`May` before `M…`, full names first).
        let mut best: Option<(usize, usize)> = None;
        for (i, w) in words.iter().enumerate() {
            let w = w.as_bytes();
            if rest.len() >= w.len()
                && rest[..w.len()].eq_ignore_ascii_case(w)
                && best.is_none_or(|(_, len)| w.len() > len)
            {
                best = Some((i, w.len()));
            }
        }
        let (i, len) = best?;
        self.pos += len;
        Some(i)
    }

    fn literal(&mut self, text: &str) -> bool {
        let t = text.as_bytes();
        let rest = &self.bytes[self.pos..];
        if rest.len() >= t.len() && rest[..t.len()].eq_ignore_ascii_case(t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    fn offset(&mut self, allow_z: bool) -> Option<i32> {
        if allow_z && (self.literal("Z")) {
            return Some(0);
        }
        let sign = match self.bytes.get(self.pos)? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        self.pos += 1;
        let (h, _) = self.digits(1, 2)?;
        let _ = self.literal(":");
        let m = self.digits(2, 2).map(|(m, _)| m).unwrap_or(0);
        Some(sign * (h as i32 * 3600 + m as i32 * 60))
    }
}

fn parse_with(fields: &[Field], input: &mut Input, parts: &mut Parts) -> bool {
    for field in fields {
        let ok = match field {
            Field::Literal(s) => input.literal(s),
            Field::Era => input.word(&["AD", "BC"]).is_some(),
            Field::Year(n) | Field::WeekYear(n) => {
                let year = if *n == 2 {
                    input.digits(2, 2).map(|(v, _)| 2000 + v)
                } else {
                    input.digits((*n).max(1), 10).map(|(v, _)| v)
                };
                match year.and_then(|y| i32::try_from(y).ok()) {
                    Some(y) => {
                        parts.year = Some(y);
                        true
                    }
                    None => false,
                }
            }
            Field::Month(n) => {
                let m = match n {
                    1 | 2 => input.number(*n, 2),
                    3 => {
                        let short: Vec<&str> = MONTHS.iter().map(|m| &m[..3]).collect();
                        input.word(&short).map(|i| i as u32 + 1)
                    }
                    _ => input.word(&MONTHS).map(|i| i as u32 + 1),
                };
                parts.month = m;
                m.is_some()
            }
            Field::Day(n) => {
                parts.day = input.number(*n, 2);
                parts.day.is_some()
            }
            Field::DayOfYear(n) => {
                parts.day_of_year = input.number(*n, 3);
                parts.day_of_year.is_some()
            }
            Field::Quarter(n) => match n {
                1 | 2 => input.number(*n, 1).is_some(),
                3 => input.literal("Q") && input.number(1, 1).is_some(),
                _ => input
                    .word(&["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"])
                    .is_some(),
            },
            Field::DayOfWeekName(n) => {
                if *n >= 4 {
                    input.word(&DAYS).is_some()
                } else {
                    let short: Vec<&str> = DAYS.iter().map(|d| &d[..3]).collect();
                    input.word(&short).is_some()
                }
            }
            Field::DayOfWeekNumber(n) => input.number(*n, 1).is_some(),
            Field::AmPm => match input.word(&["AM", "PM"]) {
                Some(i) => {
                    parts.pm = Some(i == 1);
                    true
                }
                None => false,
            },
            Field::Hour24(n) | Field::HourFrom1(n) => {
                let h = input.number(*n, 2);
                parts.hour = h.map(|h| if h == 24 { 0 } else { h });
                h.is_some_and(|h| h <= 24)
            }
            Field::Hour12(n) | Field::Hour11(n) => {
                parts.hour12 = input.number(*n, 2);
                parts.hour12.is_some_and(|h| h <= 12)
            }
            Field::Minute(n) => {
                parts.minute = input.number(*n, 2);
                parts.minute.is_some_and(|m| m < 60)
            }
            Field::Second(n) => {
                parts.second = input.number(*n, 2);
                parts.second.is_some_and(|s| s < 60)
            }
            Field::Fraction(n) => match input.digits(1, *n) {
                Some((v, len)) => {
                    parts.nanos = u32::try_from(v * 10i64.pow(9 - len as u32)).ok();
                    true
                }
                None => false,
            },
            Field::Offset { z_for_zero, .. } => match input.offset(*z_for_zero) {
                Some(o) => {
                    parts.offset = Some(o);
                    true
                }
                None => false,
            },
            Field::OffsetZ(_) | Field::OffsetO(_) => {
                let _ = input.literal("GMT");
                match input.offset(true) {
                    Some(o) => {
                        parts.offset = Some(o);
                        true
                    }
                    None => {
                        parts.offset = Some(0);
                        true
                    }
                }
            }
            Field::ZoneId | Field::ZoneName(_) => {
                let start = input.pos;
                while input.pos < input.bytes.len()
                    && (input.bytes[input.pos].is_ascii_alphanumeric()
                        || b"/_+-:".contains(&input.bytes[input.pos]))
                {
                    input.pos += 1;
                }
                let name = String::from_utf8_lossy(&input.bytes[start..input.pos]);
                match zone_offset(&name) {
                    Some(o) => {
                        parts.offset = Some(o);
                        true
                    }
                    None => false,
                }
            }
            Field::Name {
                of, abbreviated, ..
            } => {
                let names: Vec<&str> = match of {
                    NameOf::Month => MONTHS.to_vec(),
                    NameOf::Day => DAYS.to_vec(),
                };
                let names: Vec<&str> = if *abbreviated {
                    names.iter().map(|n| &n[..3]).collect()
                } else {
                    names
                };
                match input.word(&names) {
                    Some(i) => {
                        if *of == NameOf::Month {
                            parts.month = Some(i as u32 + 1);
                        }
                        if !*abbreviated {
                            // Blank padding after a full name.
                            while input.bytes.get(input.pos) == Some(&b' ') {
                                input.pos += 1;
                            }
                        }
                        true
                    }
                    None => false,
                }
            }
            Field::Meridiem { dots, .. } => {
                let words: &[&str] = if *dots {
                    &["a.m.", "p.m."]
                } else {
                    &["am", "pm"]
                };
                match input.word(words) {
                    Some(i) => {
                        parts.pm = Some(i == 1);
                        true
                    }
                    None => false,
                }
            }
            Field::Ordinal { .. } => input.word(&["st", "nd", "rd", "th"]).is_some(),
            Field::Number { of, .. } => match of {
                Numbered::Offset | Numbered::OffsetHours => match input.offset(false) {
                    Some(o) => {
                        parts.offset = Some(o);
                        true
                    }
                    None => false,
                },
                Numbered::RomanMonth { .. } => {
                    const ROMAN: [&str; 12] = [
                        "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
                    ];
                    match input.word(&ROMAN) {
                        Some(i) => {
                            parts.month = Some(i as u32 + 1);
                            true
                        }
                        None => false,
                    }
                }
                _ => input.digits(1, 10).is_some(),
            },
            Field::Digits { into, max } => match input.digits(1, *max) {
                Some((v, len)) => {
                    let v32 = u32::try_from(v).ok();
                    match into {
                        Part::Year => parts.year = i32::try_from(v).ok(),
                        Part::Month => parts.month = v32,
                        Part::Day => parts.day = v32,
                        Part::DayOfYear => parts.day_of_year = v32,
                        Part::Hour24 => parts.hour = v32,
                        Part::Hour12 => parts.hour12 = v32,
                        Part::Minute => parts.minute = v32,
                        Part::Second => parts.second = v32,
                        Part::Fraction => {
                            parts.nanos = u32::try_from(v * 10i64.pow(9 - len as u32)).ok()
                        }
                    }
                    match into {
                        Part::Hour24 => v <= 24,
                        Part::Hour12 => (1..=12).contains(&v),
                        Part::Minute | Part::Second => v < 60,
                        _ => true,
                    }
                }
                None => false,
            },
            Field::Optional(inner) => {
                let saved = input.pos;
                let mut trial = Parts::default();
                if parse_with(inner, input, &mut trial) {
                    merge(parts, trial);
                } else {
                    input.pos = saved;
                }
                true
            }
        };
        if !ok {
            return false;
        }
    }
    true
}

fn merge(parts: &mut Parts, other: Parts) {
    parts.year = other.year.or(parts.year);
    parts.month = other.month.or(parts.month);
    parts.day = other.day.or(parts.day);
    parts.day_of_year = other.day_of_year.or(parts.day_of_year);
    parts.hour = other.hour.or(parts.hour);
    parts.hour12 = other.hour12.or(parts.hour12);
    parts.pm = other.pm.or(parts.pm);
    parts.minute = other.minute.or(parts.minute);
    parts.second = other.second.or(parts.second);
    parts.nanos = other.nanos.or(parts.nanos);
    parts.offset = other.offset.or(parts.offset);
}

/// The offset of a zone named in a parsed value, at no particular instant
/// (fixed zones only; named regions use their standard offset now).
fn zone_offset(name: &str) -> Option<i32> {
    use chrono::Offset;
    let tz = crate::udf::parse_zone(name)?;
    let now = chrono::Utc::now().naive_utc();
    Some(
        chrono::TimeZone::offset_from_utc_datetime(&tz, &now)
            .fix()
            .local_minus_utc(),
    )
}

/// For tests: 2016-04-08 13:08:15.123456 written with `text`, at `offset`
/// seconds east of UTC in `zone`.
#[cfg(test)]
pub(super) fn shown_at(text: &str, offset: i32, zone: &str) -> String {
    let local = NaiveDateTime::parse_from_str("2016-04-08 13:08:15.123456", "%Y-%m-%d %H:%M:%S%.f")
        .unwrap();
    let mut out = String::new();
    Pattern::new(text).unwrap().format(
        &Shown {
            local,
            offset,
            zone,
        },
        &mut out,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        shown_at(text, 0, "UTC")
    }

    #[test]
    fn formats_as_spark_does() {
        assert_eq!(shown("yyyy-MM-dd HH:mm:ss"), "2016-04-08 13:08:15");
        assert_eq!(shown("y"), "2016");
        assert_eq!(shown("yy"), "16");
        assert_eq!(shown("MMM d, yyyy"), "Apr 8, 2016");
        assert_eq!(shown("EEEE MMMM"), "Friday April");
        assert_eq!(shown("EEE"), "Fri");
        assert_eq!(shown("hh:mm a"), "01:08 PM");
        assert_eq!(shown("SSS"), "123");
        assert_eq!(shown("'T'HH''"), "T13'");
        assert_eq!(shown("QQQ"), "Q2");
        assert_eq!(shown("XXX"), "Z");
        assert_eq!(shown("xxx"), "+00:00");
        assert_eq!(shown("D"), "99");
    }

    #[test]
    fn parses_as_spark_does() {
        let p = Pattern::new("yyyy-MM-dd HH:mm:ss").unwrap();
        assert_eq!(
            p.parse("2016-12-31 00:12:00").unwrap().0.to_string(),
            "2016-12-31 00:12:00"
        );
        assert!(p.parse("2016-12-31").is_err());
        assert!(p.parse("2016-12-31 00:12:00x").is_err());
        let p = Pattern::new("dd/MM/yyyy").unwrap();
        assert_eq!(
            p.parse("08/04/2016").unwrap().0.date().to_string(),
            "2016-04-08"
        );
        let p = Pattern::new("MMM d yyyy").unwrap();
        assert_eq!(
            p.parse("apr 8 2016").unwrap().0.date().to_string(),
            "2016-04-08"
        );
        assert!(Pattern::new("yyyy-MM-dd")
            .unwrap()
            .parse("2016-13-01")
            .is_err());
        assert!(Pattern::new("yyyy-nn").is_err());
    }
}
