//! The README's Rust program is `examples/readme.rs`, which cargo builds
//! with the tests: the two must not drift apart.

#[test]
fn the_readme_program_is_the_readme_example() {
    let readme = include_str!("../../../README.md");
    let example = include_str!("../examples/readme.rs");
    let start = readme.find("```rust\n").expect("the README has a Rust block") + "```rust\n".len();
    let end = start + readme[start..].find("```\n").expect("the block ends");
    let body = example.split_once("\n\n").map_or(example, |(_, rest)| rest);
    assert_eq!(&readme[start..end], body, "README.md and crates/relok/examples/readme.rs differ");
}
