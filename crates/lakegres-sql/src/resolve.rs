//! The resolver every statement's text goes through before it is planned:
//! the session's views and variables, below the statements that define
//! them. Statement modules and the planner call it; it calls none of them.

pub(crate) mod quoted_strings;
pub(crate) mod variables;
pub(crate) mod views;
