package mcphttp

var Followable = followable
