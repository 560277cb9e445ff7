//! The declared `CHAR(n)` / `VARCHAR(n)` of a STRING column, as Spark
//! keeps it in the column's field metadata: storage writes it, the SQL
//! layer reads it for DDL and the catalog, and the functions check a
//! written value's length against it.

/// Spark's field metadata for a column declared `CHAR(n)` or `VARCHAR(n)`:
/// Delta stores a STRING, and this key keeps the declared type
/// (`varchar(20)`), as Databricks writes it.
pub const CHAR_VARCHAR_TYPE: &str = "__CHAR_VARCHAR_TYPE_STRING";

/// A column declared `CHAR(n)` or `VARCHAR(n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharVarchar {
    /// CHAR (fixed length) rather than VARCHAR.
    pub fixed: bool,
    /// The most characters a value may have.
    pub length: usize,
}

impl CharVarchar {
    /// Reads `char(n)` / `varchar(n)` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        let (fixed, rest) = match text.strip_prefix("varchar(") {
            Some(rest) => (false, rest),
            None => (true, text.strip_prefix("char(")?),
        };
        let length = rest.strip_suffix(')')?.trim().parse().ok()?;
        Some(Self { fixed, length })
    }
}

impl std::fmt::Display for CharVarchar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.fixed { "char" } else { "varchar" };
        write!(f, "{kind}({})", self.length)
    }
}

#[cfg(test)]
mod tests {
    use super::CharVarchar;

    #[test]
    fn char_varchar_round_trips() {
        for text in ["varchar(20)", "char(3)"] {
            assert_eq!(
                CharVarchar::parse(text).map(|c| c.to_string()).as_deref(),
                Some(text)
            );
        }
        assert_eq!(
            CharVarchar::parse("VARCHAR( 5)"),
            Some(CharVarchar {
                fixed: false,
                length: 5
            })
        );
        assert_eq!(CharVarchar::parse("string"), None);
    }
}
