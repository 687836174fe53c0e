//! A loopback S3-compatible server for trying and benchmarking object storage by hand:
//! `s3s-fs` serving a local directory (bucket `b` is the directory `<root>/b`), with the access
//! key and secret taken from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
//!
//! ```sh
//! export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local-secret AWS_REGION=us-east-1
//! mkdir -p /tmp/s3root/bench && cp patients.parquet /tmp/s3root/bench/
//! cargo run --release --example s3_server -- /tmp/s3root 127.0.0.1:9000 &
//! AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ALLOW_HTTP=true \
//!   anon sql --table p=s3://bench/patients.parquet "SELECT count(*) FROM p"
//! ```

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(root), Some(address)) = (args.next(), args.next()) else {
        return Err("usage: s3_server ROOT_DIR HOST:PORT".into());
    };
    let (key, secret) = (
        std::env::var("AWS_ACCESS_KEY_ID")?,
        std::env::var("AWS_SECRET_ACCESS_KEY")?,
    );
    let file_system = s3s_fs::FileSystem::new(&root).map_err(|e| format!("{root}: {e:?}"))?;
    let mut builder = S3ServiceBuilder::new(file_system);
    builder.set_auth(SimpleAuth::from_single(key, secret));
    let service = builder.build();
    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("serving {root} at http://{}", listener.local_addr()?);
    let http = ConnBuilder::new(TokioExecutor::new());
    loop {
        let (socket, _) = listener.accept().await?;
        let connection = http
            .serve_connection(TokioIo::new(socket), service.clone())
            .into_owned();
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}
