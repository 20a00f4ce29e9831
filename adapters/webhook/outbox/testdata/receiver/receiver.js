// receiver.js is a callback endpoint for BobNet's tests: it checks every
// delivery with the official Standard Webhooks library, exactly as a
// receiver following the library's README would, and reports each one as a
// JSON line on stdout. The secret comes from CALLBACK_SECRET. Its first
// line is {"listening": PORT}.
"use strict";
const http = require("http");
const { Webhook } = require("standardwebhooks");

const wh = new Webhook(process.env.CALLBACK_SECRET);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const report = { id: req.headers["webhook-id"] || "", path: req.url };
    try {
      const payload = wh.verify(body, req.headers);
      report.ok = true;
      report.type = payload.type;
      report.body = body;
      res.writeHead(204);
    } catch (err) {
      report.ok = false;
      report.error = String(err && err.message ? err.message : err);
      res.writeHead(401, { "Content-Type": "text/plain" });
    }
    res.end();
    process.stdout.write(JSON.stringify(report) + "\n");
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ listening: server.address().port }) + "\n");
});

// The test closes stdin when it is done; the receiver then ends.
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
