package render

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/mcp":                                  "https://example.com/mcp",
		"https://user:pw@example.com/mcp":                          "https://***@example.com/mcp",
		"https://example.com/mcp?api_key=abc&x=1":                  "https://example.com/mcp?api_key=***&x=1",
		"https://example.com/mcp?access_token=abc&Password=p#frag": "https://example.com/mcp?access_token=***&Password=***#frag",
		"https://example.com/mcp?key=k&client-secret=s&sig=x&q=ok": "https://example.com/mcp?key=***&client-secret=***&sig=***&q=ok",
		"http://${HOST}/mcp?token=${TOKEN}":                        "http://${HOST}/mcp?token=${TOKEN}",
		"http://${HOST}/mcp?token=${TOKEN:-ghp_x}":                 "http://${HOST}/mcp?token=***",
		"https://example.com/a@b/mcp":                              "https://example.com/a@b/mcp",
		"https://example.com/mcp?x=\x1b]0;title\x07":               "https://example.com/mcp?x=]0;title",
		// Names as a server reads them: escaped, escaped twice, with a
		// broken escape beside; and parameters in the fragment.
		"https://example.com/mcp?api%5Fkey=abc&ap%69_key=d":                  "https://example.com/mcp?api%5Fkey=***&ap%69_key=***",
		"https://example.com/mcp?api%255Fkey=abc&api%5Fkey%ZZ=d":             "https://example.com/mcp?api%255Fkey=***&api%5Fkey%ZZ=***",
		"https://example.com/mcp#access_token=abc&token_type=bearer&state=s": "https://example.com/mcp#access_token=***&token_type=***&state=s",
		"https://example.com/mcp?q=1#x=1&id%5Ftoken=abc":                     "https://example.com/mcp?q=1#x=1&id%5Ftoken=***",
		"https://example.com/mcp?q=1;token=abc":                              "https://example.com/mcp?q=1;token=***",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":        "plain\ttext\n",
		"\x1b[31mred\x1b[0m":   `\x1b[31mred\x1b[0m`,
		"txt.\u202eexe":        `txt.\u202eexe`,
		"bad \xff byte":        `bad \xff byte`,
		"real \uFFFD stays":    "real \uFFFD stays",
		"cr\rdel\x7fc1\u0085.": `cr\x0ddel\x7fc1\u0085.`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
