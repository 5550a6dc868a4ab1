//! The shipped application on an empty cache folder: correct results, zero
//! compiles, its kernel from the embedded bundle — on the cpu device here,
//! and on every GPU `RELOK_TEST_DEVICES` lists (`cuda`: zero PTX JIT too
//! when the bundle carries sm_90 cubins, i.e. ptxas was found at build time).

use std::process::Command;

fn run(device: &str) -> String {
    let cache = std::env::temp_dir().join(format!("relok-shipped-app-{device}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let out = Command::new(env!("CARGO_BIN_EXE_relok-example-shipped"))
        .env("RELOK_DEVICE", device)
        .env("RELOK_CACHE_DIR", &cache)
        .output()
        .expect("the application runs");
    let _ = std::fs::remove_dir_all(&cache);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{device}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_shipped_application_compiles_nothing_on_empty_caches() {
    let mut devices = vec!["cpu".to_owned()];
    if let Ok(list) = std::env::var("RELOK_TEST_DEVICES") {
        devices.extend(list.split(',').map(str::trim).filter(|d| !d.is_empty() && *d != "cpu").map(str::to_owned));
    } else {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"note: RELOK_TEST_DEVICES unset: the shipped application ran on the cpu device only\n",
        );
    }
    for d in &devices {
        let line = run(d);
        assert!(line.contains("\"wrong\":0"), "{d}: {line}");
        assert!(line.contains("\"compiles\":0"), "{d}: {line}");
        assert!(line.contains("\"bundle_hits\":1"), "{d}: {line}");
        if d.starts_with("cuda") && line.contains("\"bundled\":1") {
            assert!(line.contains("\"linked\":0") && line.contains("\"jit\":0"), "{d}: {line}");
        }
    }
}
