//! Icons as untrusted data: the source rules, the ranking, the format and
//! size checks of the bytes, and the fetch from an HTTPS server (same
//! origin, redirects, no credentials), alone and through the client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use base64::Engine;
use mcp_bridge_protocol::types::{Icon, Implementation};
use mcp_bridge_sdk::icons::{
    ExtraFormats, Format, IconError, IconPolicy, IconWanted, Image, OriginRule, Source, check_source, fetch, inspect,
    select,
};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::transport::TlsClientOptions;
use mcp_bridge_sdk::transport::http::{BearerToken, HttpConfig};
use mcp_bridge_sdk::{Client, ClientOptions, Server};
use serde_json::json;
use test_support::oauth::{TestPki, serve};

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b
}

fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    b.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    b.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08]);
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    b
}

fn gif(width: u16, height: u16) -> Vec<u8> {
    let mut b = b"GIF89a".to_vec();
    b.extend_from_slice(&width.to_le_bytes());
    b.extend_from_slice(&height.to_le_bytes());
    b.extend_from_slice(&[0, 0, 0]);
    b
}

fn webp_vp8x(width: u32, height: u32) -> Vec<u8> {
    let mut b = b"RIFF\x16\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
    b.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    b.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    b
}

const SVG: &[u8] = b"<?xml version=\"1.0\"?>\n<!-- logo -->\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"16\"/>";

fn icon(src: &str) -> Icon {
    serde_json::from_value(json!({ "src": src })).unwrap()
}

fn icon_with(value: serde_json::Value) -> Icon {
    serde_json::from_value(value).unwrap()
}

fn data_uri(media_type: &str, bytes: &[u8]) -> String {
    format!("data:{media_type};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A decoder that accepts everything, marking what it saw.
fn passing_decoder(seen: Arc<Mutex<Vec<Format>>>) -> mcp_bridge_sdk::icons::IconDecoder {
    Arc::new(move |image: Image| {
        seen.lock().unwrap().push(image.format);
        Ok(image)
    })
}

#[test]
fn formats_are_told_by_their_bytes_and_sizes_read_from_their_headers() {
    let policy = IconPolicy::default()
        .with_formats(ExtraFormats::default().with_gif(true).with_webp(true).with_svg(true))
        .with_decoder(passing_decoder(Arc::default()));
    let cases = [
        (png(32, 16), Format::Png, Some((32u32, 16u32))),
        (jpeg(48, 24), Format::Jpeg, Some((48, 24))),
        (gif(20, 10), Format::Gif, Some((20, 10))),
        (webp_vp8x(640, 480), Format::Webp, Some((640, 480))),
        (SVG.to_vec(), Format::Svg, None),
    ];
    for (bytes, format, dimensions) in cases {
        let image = inspect(bytes, None, None, &policy).unwrap();
        assert_eq!((image.format, image.dimensions), (format, dimensions));
    }
    assert_eq!(inspect(b"BM....".to_vec(), None, None, &policy), Err(IconError::UnknownFormat));
    // A PNG signature without its header is not an image.
    assert_eq!(inspect(b"\x89PNG\r\n\x1a\n".to_vec(), None, None, &policy), Err(IconError::UnknownFormat));
}

#[test]
fn the_media_type_must_match_the_bytes() {
    let policy = IconPolicy::default();
    assert!(
        inspect(png(8, 8), Some("image/png"), Some("image/jpeg"), &policy).is_ok(),
        "the transfer type applies first"
    );
    assert!(inspect(png(8, 8), Some("application/octet-stream"), Some("image/png"), &policy).is_ok());
    let mismatch = inspect(png(8, 8), Some("text/html; charset=utf-8"), None, &policy).unwrap_err();
    assert_eq!(mismatch, IconError::MimeMismatch { declared: "text/html; charset=utf-8".into(), found: Format::Png });
    let declared = inspect(png(8, 8), Some("application/octet-stream"), Some("image/jpeg"), &policy).unwrap_err();
    assert!(matches!(declared, IconError::MimeMismatch { found: Format::Png, .. }));
}

#[test]
fn gif_webp_and_svg_need_the_policy_and_a_decoder() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let off = IconPolicy::default();
    for (bytes, format) in [(gif(1, 1), Format::Gif), (webp_vp8x(1, 1), Format::Webp), (SVG.to_vec(), Format::Svg)] {
        assert_eq!(inspect(bytes.clone(), None, None, &off), Err(IconError::FormatNotAllowed(format)));
        let turned_on_without_decoder =
            IconPolicy::default().with_formats(ExtraFormats::default().with_gif(true).with_webp(true).with_svg(true));
        assert_eq!(
            inspect(bytes.clone(), None, None, &turned_on_without_decoder),
            Err(IconError::FormatNotAllowed(format))
        );
        let on = IconPolicy::default()
            .with_formats(ExtraFormats::default().with_gif(true).with_webp(true).with_svg(true))
            .with_decoder(passing_decoder(seen.clone()));
        assert_eq!(inspect(bytes, None, None, &on).unwrap().format, format);
    }
    assert_eq!(*seen.lock().unwrap(), [Format::Gif, Format::Webp, Format::Svg]);
    // The decoder sees PNG and JPEG too, and its refusal is the caller's error.
    let refusing = IconPolicy::default().with_decoder(Arc::new(|_| Err("not today".into())));
    assert_eq!(inspect(png(1, 1), None, None, &refusing), Err(IconError::DecoderFailed("not today".into())));
}

#[test]
fn dimensions_and_size_have_limits() {
    let policy = IconPolicy::default().with_max_dimension(256).with_max_bytes(1000);
    assert_eq!(
        inspect(png(257, 10), None, None, &policy),
        Err(IconError::DimensionsTooLarge { width: 257, height: 10, max: 256 })
    );
    assert!(matches!(inspect(jpeg(10, 300), None, None, &policy), Err(IconError::DimensionsTooLarge { .. })));
    let mut big = png(8, 8);
    big.resize(1001, 0);
    assert_eq!(inspect(big.clone(), None, None, &policy), Err(IconError::TooLarge(1000)));
    assert_eq!(check_source(&data_uri("image/png", &big), None, &policy), Err(IconError::TooLarge(1000)));
}

#[test]
fn sources_are_https_of_the_endpoint_or_data_uris() {
    let policy = IconPolicy::default();
    let endpoint = Some("https://mcp.example.com/mcp");
    assert!(matches!(check_source("https://mcp.example.com/icon.png", endpoint, &policy), Ok(Source::Https(_))));
    assert!(matches!(check_source("https://mcp.example.com:443/i.png", endpoint, &policy), Ok(Source::Https(_))));
    for src in ["http://mcp.example.com/i.png", "javascript:alert(1)", "file:///etc/passwd", "ftp://x/i", "ws://x/i"] {
        assert_eq!(check_source(src, endpoint, &policy), Err(IconError::UnsupportedScheme), "{src}");
    }
    assert!(matches!(
        check_source("https://u:p@mcp.example.com/i.png", endpoint, &policy),
        Err(IconError::InvalidUri(_))
    ));
    assert!(matches!(check_source("not a url", endpoint, &policy), Err(IconError::InvalidUri(_))));
    let other = "https://cdn.example.net/i.png";
    assert_eq!(check_source(other, endpoint, &policy), Err(IconError::OriginNotAllowed));
    // An http endpoint never matches an https icon; stdio has no origin.
    assert_eq!(
        check_source("https://mcp.example.com/i.png", Some("http://mcp.example.com/mcp"), &policy),
        Err(IconError::OriginNotAllowed)
    );
    assert_eq!(check_source("https://mcp.example.com/i.png", None, &policy), Err(IconError::OriginNotAllowed));
    // A wss endpoint has the https origin of its host.
    assert!(check_source("https://mcp.example.com/i.png", Some("wss://mcp.example.com/ws"), &policy).is_ok());
    let trusted = IconPolicy::default().with_trusted_origins(vec!["https://cdn.example.net".into()]);
    assert!(check_source(other, None, &trusted).is_ok());
    assert!(check_source(other, endpoint, &IconPolicy::default().with_origins(OriginRule::Any)).is_ok());
    let none = IconPolicy::default().with_origins(OriginRule::None);
    assert_eq!(check_source("https://mcp.example.com/i.png", endpoint, &none), Err(IconError::OriginNotAllowed));
    // data: URIs, base64 or percent-encoded, unless turned off.
    let Ok(Source::Data { media_type, bytes }) = check_source(&data_uri("image/png", &png(1, 1)), None, &none) else {
        panic!()
    };
    assert_eq!((media_type.as_deref(), bytes), (Some("image/png"), png(1, 1)));
    let Ok(Source::Data { bytes, .. }) = check_source("data:image/svg+xml,%3Csvg%2F%3E", None, &policy) else {
        panic!()
    };
    assert_eq!(bytes, b"<svg/>");
    assert!(matches!(check_source("data:image/png;base64,!!", None, &policy), Err(IconError::InvalidUri(_))));
    let no_data = IconPolicy::default().with_allow_data(false);
    assert_eq!(check_source("data:,x", None, &no_data), Err(IconError::DataNotAllowed));
}

#[test]
fn select_ranks_by_theme_then_size_then_order() {
    let endpoint = Some("https://s.example/mcp");
    let policy = IconPolicy::default();
    let icons = vec![
        icon_with(json!({"src": "https://s.example/16.png", "sizes": ["16x16"], "theme": "light"})),
        icon_with(json!({"src": "https://s.example/64.png", "sizes": ["64x64"]})),
        icon_with(json!({"src": "https://s.example/any.png", "sizes": ["any"]})),
        icon_with(json!({"src": "https://s.example/32-dark.png", "sizes": ["32x32"], "theme": "dark"})),
        icon_with(json!({"src": "https://s.example/48-dark.png", "sizes": ["48x48"], "theme": "dark"})),
        icon_with(json!({"src": "https://s.example/24-dark.png", "sizes": ["24x24"], "theme": "dark"})),
        icon_with(json!({"src": "https://s.example/logo.svg", "mimeType": "image/svg+xml", "theme": "dark"})),
        icon_with(json!({"src": "https://elsewhere.example/32.png", "sizes": ["32x32"], "theme": "dark"})),
    ];
    let pick = |size: Option<u32>, theme: Option<&str>| {
        let mut wanted = IconWanted::default();
        (wanted.size, wanted.theme) = (size, theme.map(str::to_owned));
        select(&icons, &wanted, endpoint, &policy).map(|i| i.src.rsplit('/').next().unwrap().to_owned())
    };
    assert_eq!(pick(Some(32), Some("dark")).as_deref(), Some("32-dark.png"), "exact size in the theme");
    assert_eq!(pick(Some(40), Some("dark")).as_deref(), Some("48-dark.png"), "the smallest larger");
    assert_eq!(pick(Some(64), Some("dark")).as_deref(), Some("48-dark.png"), "then the largest smaller");
    assert_eq!(pick(Some(16), Some("light")).as_deref(), Some("16.png"));
    assert_eq!(pick(Some(20), Some("light")).as_deref(), Some("16.png"), "its theme beats a better size");
    assert_eq!(pick(Some(64), None).as_deref(), Some("64.png"));
    assert_eq!(pick(Some(100), None).as_deref(), Some("any.png"), "any beats smaller sizes");
    assert_eq!(pick(None, None).as_deref(), Some("16.png"), "no preference: the server's order");
    assert_eq!(pick(Some(64), Some("sepia")).as_deref(), Some("64.png"), "no theme beats another theme");
    // The SVG is a candidate once the policy and a decoder allow it.
    let svg_ok = IconPolicy::default()
        .with_formats(ExtraFormats::default().with_svg(true))
        .with_decoder(passing_decoder(Arc::default()));
    let wanted = IconWanted::default().with_size(32).with_theme("dark");
    let only_svg = [icons[6].clone(), icons[7].clone()];
    assert_eq!(select(&only_svg, &wanted, endpoint, &policy), None);
    assert_eq!(
        select(&only_svg, &wanted, endpoint, &svg_ok).map(|i| i.src.as_str()),
        Some("https://s.example/logo.svg")
    );
}

/// What the icon server saw of each request.
type Seen = Arc<Mutex<Vec<HeaderMap>>>;

fn icon_routes(seen: Seen, other_origin: String) -> axum::Router {
    let record = move |headers: HeaderMap| {
        seen.lock().unwrap().push(headers);
    };
    let png_response = |content_type: &'static str, bytes: Vec<u8>| {
        move || async move { ([(header::CONTENT_TYPE, content_type)], bytes).into_response() }
    };
    axum::Router::new()
        .route(
            "/icon.png",
            get(move |headers: HeaderMap| async move {
                record(headers);
                ([(header::CONTENT_TYPE, "image/png")], png(32, 32)).into_response()
            }),
        )
        .route("/octet", get(png_response("application/octet-stream", png(16, 16))))
        .route("/html", get(png_response("text/html", png(16, 16))))
        .route("/huge", get(png_response("image/png", png(5000, 5000))))
        .route("/big", get(png_response("image/png", vec![0u8; 2 << 20])))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                png(1, 1)
            }),
        )
        .route("/hop1", get(|| async { Redirect::temporary("/hop2") }))
        .route("/hop2", get(|| async { Redirect::temporary("/hop3") }))
        .route("/hop3", get(|| async { Redirect::temporary("/icon.png") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/away", get(move || async move { Redirect::temporary(&format!("{other_origin}/icon.png")) }))
        .route(
            "/downgrade",
            get(|| async {
                Response::builder()
                    .status(302)
                    .header("location", "http://127.0.0.1:9/i.png")
                    .body(axum::body::Body::empty())
                    .unwrap()
            }),
        )
}

#[tokio::test]
async fn fetches_follow_the_rules_of_origin_redirects_type_and_size() {
    let dir = std::env::temp_dir().join(format!("mcp-sdk-icons-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let other = serve(icon_routes(Arc::default(), String::new()), Some(&pki)).await;
    let seen: Seen = Arc::default();
    let base = serve(icon_routes(seen.clone(), other.clone()), Some(&pki)).await;
    let endpoint = format!("{base}/mcp");
    let policy = IconPolicy::default()
        .with_tls(TlsClientOptions::default().with_ca_file(pki.ca_file.clone()))
        .with_timeout(Duration::from_millis(500));
    let get = |path: &str| {
        let (icon, endpoint, policy) = (icon(&format!("{base}{path}")), endpoint.clone(), policy.clone());
        async move { fetch(&icon, Some(&endpoint), &policy).await }
    };
    assert_eq!(get("/icon.png").await.unwrap().dimensions, Some((32, 32)));
    assert_eq!(get("/hop1").await.unwrap().format, Format::Png, "three redirects on the origin");
    assert_eq!(get("/loop").await, Err(IconError::TooManyRedirects));
    assert_eq!(get("/away").await, Err(IconError::RedirectRefused));
    assert_eq!(get("/downgrade").await, Err(IconError::RedirectRefused));
    assert!(matches!(get("/html").await, Err(IconError::MimeMismatch { .. })));
    assert!(matches!(get("/huge").await, Err(IconError::DimensionsTooLarge { .. })));
    assert_eq!(get("/big").await, Err(IconError::TooLarge(1 << 20)));
    assert_eq!(get("/missing").await, Err(IconError::Http(404)));
    assert_eq!(get("/slow").await, Err(IconError::Timeout));
    let declared = icon_with(json!({"src": format!("{base}/octet"), "mimeType": "image/png"}));
    assert!(fetch(&declared, Some(&endpoint), &policy).await.is_ok());
    // Another origin only when trusted.
    let elsewhere = icon(&format!("{other}/icon.png"));
    assert_eq!(fetch(&elsewhere, Some(&endpoint), &policy).await, Err(IconError::OriginNotAllowed));
    let trusting = policy.clone().with_trusted_origins(vec![other.clone()]);
    assert!(fetch(&elsewhere, Some(&endpoint), &trusting).await.is_ok());
    // Without the test CA the server is not trusted.
    let untrusted = fetch(&icon(&format!("{base}/icon.png")), Some(&endpoint), &IconPolicy::default()).await;
    assert!(matches!(untrusted, Err(IconError::Fetch(_))), "{untrusted:?}");
    for headers in seen.lock().unwrap().iter() {
        assert!(headers.get(header::COOKIE).is_none() && headers.get(header::AUTHORIZATION).is_none(), "{headers:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_client_fetches_icons_of_its_endpoint_without_its_credentials() {
    let dir = std::env::temp_dir().join(format!("mcp-sdk-client-icons-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let seen: Seen = Arc::default();
    let server = Server::builder(Implementation::new("iconic", "1")).build();
    let options = HttpOptions::default().with_allowed_hosts(vec!["127.0.0.1".into()]);
    let router = server.http_router(options).merge(icon_routes(seen.clone(), String::new()));
    let base = serve(router, Some(&pki)).await;
    let config = HttpConfig::new(format!("{base}/mcp"))
        .with_ca_file(pki.ca_file.clone())
        .with_auth(Arc::new(BearerToken::new("mcp-token-s3cret")));
    let options = ClientOptions::new("c", "1")
        .with_icons(IconPolicy::default().with_tls(TlsClientOptions::default().with_ca_file(pki.ca_file.clone())));
    let client = Client::new(options, mcp_bridge_sdk::transport::http::connect(config).unwrap());
    client.discover(&Default::default()).await.unwrap();
    let icons = [icon("https://elsewhere.example/i.png"), icon(&format!("{base}/icon.png"))];
    let chosen = client.select_icon(&icons, &IconWanted::default()).unwrap();
    assert_eq!(chosen.src, format!("{base}/icon.png"));
    let image = client.fetch_icon(chosen).await.unwrap();
    assert_eq!((image.format, image.dimensions), (Format::Png, Some((32, 32))));
    assert_eq!(client.fetch_icon(&icons[0]).await, Err(IconError::OriginNotAllowed));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].get(header::AUTHORIZATION).is_none(), "the MCP credentials stay with MCP requests");
    let _ = std::fs::remove_dir_all(&dir);
}
