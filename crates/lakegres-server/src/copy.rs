//! The wire side of COPY: `COPY … TO STDOUT` streams rows as CopyData
//! ([`stdout`]); `COPY … FROM STDIN` waits in the connection's [`CopySlot`]
//! for the client's CopyData, CopyDone or CopyFail ([`stdin`]).

mod stdin;
mod stdout;

pub(crate) use stdin::CopySlot;
