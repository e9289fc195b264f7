//! The short answers' tests (404, 301): their HTTP/1.1 bytes and connection handling.

use super::*;

#[test]
fn not_found() {
    let date = format_http_date(NOW);
    let server = ServerFields {
        date: &date,
        server: b"",
        extra: b"",
    };
    let mut out = Vec::new();
    let req = request("GET /static/.env HTTP/1.1\r\nHost: h\r\n\r\n");
    let plan = framed(&req, &plan_not_found(&req), &server, &mut out);
    assert_eq!(plan.status, 404);
    assert_eq!(plan.body, None);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Date: Tue, 14 Nov 2023 22:15:00 GMT\r\nContent-Length: 10\r\n\r\nNot Found\n"
    );
    let mut out = Vec::new();
    let req = request("HEAD /static/.env HTTP/1.1\r\nHost: h\r\n\r\n");
    framed(&req, &plan_not_found(&req), &server, &mut out);
    assert!(
        out.ends_with(b"Content-Length: 10\r\n\r\n"),
        "no body for HEAD"
    );
}

#[test]
fn redirect_to_slash_keeps_the_query() {
    let date = format_http_date(NOW);
    let server = ServerFields {
        date: &date,
        server: b"",
        extra: b"",
    };
    let mut out = Vec::new();
    let req = request("GET /static/docs?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    let mut scratch = PlanScratch::default();
    let p = plan_redirect_to_slash(&req, &mut scratch);
    let plan = framed(&req, &p, &server, &mut out);
    assert_eq!((plan.status, plan.body, plan.keep_alive), (301, None, true));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 301 Moved Permanently\r\nLocation: /static/docs/?x=1\r\n\
         Date: Tue, 14 Nov 2023 22:15:00 GMT\r\nContent-Length: 0\r\n\r\n"
    );
    let mut out = Vec::new();
    let req = request("GET /d HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx");
    let mut scratch = PlanScratch::default();
    let p = plan_redirect_to_slash(&req, &mut scratch);
    let plan = framed(&req, &p, &server, &mut out);
    assert!(!plan.keep_alive, "an unread body closes the connection");
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("Connection: close\r\n"));
}
