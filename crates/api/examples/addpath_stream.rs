//! AddPathStream benchmark client: sends N IPv4 host routes of
//! 198.18.0.0/15 (N <= 131072) in messages of B paths to a GobgpApi
//! server over TCP (tesserad with `[api] insecure = true`, or gobgpd),
//! then waits until GetTable counts them all, and prints routes/s.
//!
//! ```sh
//! cargo run --release -p api --example addpath_stream -- http://127.0.0.1:50051 100000 1000
//! ```

use std::time::Instant;

use api::apipb::{self, gobgp_api_client::GobgpApiClient};
use api::convert::{any, api_family};

fn path(i: u32) -> apipb::Path {
    let a = std::net::Ipv4Addr::from(0xc612_0000u32 + i);
    apipb::Path {
        nlri: Some(any(
            "IPAddressPrefix",
            &apipb::IpAddressPrefix {
                prefix_len: 32,
                prefix: a.to_string(),
            },
        )),
        pattrs: vec![
            any("OriginAttribute", &apipb::OriginAttribute { origin: 0 }),
            any(
                "NextHopAttribute",
                &apipb::NextHopAttribute {
                    next_hop: "198.18.0.2".into(),
                },
            ),
        ],
        family: Some(api_family(false, false)),
        ..Default::default()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let target = args
        .get(1)
        .cloned()
        .unwrap_or("http://127.0.0.1:50051".into());
    let n: u32 = args.get(2).map_or(Ok(100_000), |s| s.parse())?;
    let batch: u32 = args.get(3).map_or(Ok(1000), |s| s.parse())?;
    if n > 1 << 17 || batch == 0 {
        return Err("routes: at most 131072 (the /32s of 198.18.0.0/15); batch: at least 1".into());
    }
    let mut c = GobgpApiClient::connect(target.clone())
        .await?
        .max_encoding_message_size(64 << 20)
        .max_decoding_message_size(64 << 20);
    let t0 = Instant::now();
    let msgs: Vec<apipb::AddPathStreamRequest> = (0..n.div_ceil(batch))
        .map(|k| apipb::AddPathStreamRequest {
            table_type: apipb::TableType::Global as i32,
            vrf_id: String::new(),
            paths: (k * batch..((k + 1) * batch).min(n)).map(path).collect(),
        })
        .collect();
    let build = t0.elapsed();
    let t1 = Instant::now();
    c.add_path_stream(tokio_stream::iter(msgs)).await?;
    let streamed = t1.elapsed();
    // In the table: GetTable until it counts every route.
    let mut polls = 0;
    loop {
        let r = c
            .get_table(apipb::GetTableRequest {
                table_type: apipb::TableType::Global as i32,
                family: Some(api_family(false, false)),
                name: String::new(),
            })
            .await?
            .into_inner();
        if r.num_destination >= u64::from(n) {
            break;
        }
        polls += 1;
        if polls > 6000 {
            return Err(format!("only {} of {n} routes in the table", r.num_destination).into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let total = t1.elapsed();
    println!(
        "{target} routes={n} batch={batch} build_s={:.3} stream_s={:.3} in_table_s={:.3} routes_per_s={:.0}",
        build.as_secs_f64(),
        streamed.as_secs_f64(),
        total.as_secs_f64(),
        f64::from(n) / total.as_secs_f64()
    );
    Ok(())
}
