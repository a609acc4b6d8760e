#!/usr/bin/env node
import { run } from "./main.js";

// an operator's terminal gets one line per error: no Node deprecation notices from the store
// clients (gRPC names an IP as TLS server name for etcd at 127.0.0.1 — DEP0123)
process.noDeprecation = true;

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  () => {
    process.exitCode = 2;
  },
);
