package host

// wasmNotKeyed are the fields of wasm.Config left out of a wasm plugin's
// declaration key (declcache.Fields takes every other one, so a field
// added to wasm.Config joins the key by itself). Dir is the working
// directory, which a declaration is not keyed by (a plugin is told it
// with each call, never at its handshake); the timeouts and the compile
// bounds decide whether the module starts, not what it declares.
var wasmNotKeyed = []string{"Dir", "InstantiateTimeout", "SlowCompileAfter", "Bounds"}
