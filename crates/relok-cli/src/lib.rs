//! The `relok` command-line tool, as a library so that its pieces (argument
//! syntax, the examples, the demo, the file-test runner) are testable.

#![expect(clippy::print_stdout, reason = "the demo and bench print their reports")]

pub mod args;
pub mod bench;
pub mod cachecmd;
pub mod demo;
pub mod devices;
pub mod diag;
pub mod examples;
pub mod filetest;
pub mod fuzz;
pub mod launch;
pub mod run;
pub mod rust_twins;
pub mod source;
