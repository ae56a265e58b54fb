//! The samples of `docs/client.md` run against a server: they are `client/examples/guide.rs`,
//! whose asserts check the outcomes the docs state, compiled here as a module.

mod support;

#[path = "../examples/guide.rs"]
#[allow(dead_code)] // its `main` and the Sentinel sample, which needs sentinels
mod guide;

use support::Server;

#[tokio::test]
async fn the_guide_samples_run_with_the_outcomes_they_state() {
    let server = Server::start();
    guide::run(&server.url()).await.unwrap();
}
