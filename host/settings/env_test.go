package settings

import (
	"runtime"
	"slices"
	"testing"
)

func TestEnvFilter(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/home/u", "AWS_SECRET=s", "GITHUB_TOKEN=g", "OPENAI_API_KEY=k", "EMPTY=", "NOEQUALS"}
	e := Env{
		Withhold: []string{"AWS_SECRET"},
		Plugins: map[string]PluginEnv{
			"deploy": {Withhold: []string{"GITHUB_TOKEN"}, Pass: []string{"OPENAI_API_KEY"}},
			"lint":   {Withhold: []string{"HOME", "EMPTY"}},
			"aws":    {Pass: []string{"AWS_SECRET"}},
		},
	}
	for _, tc := range []struct {
		name     string
		env      Env
		plugin   string
		defaults []string
		want     []string
	}{
		{"nothing withheld", Env{}, "any", nil, environ},
		{"withhold applies to every plugin", e, "other", nil,
			[]string{"PATH=/bin", "HOME=/home/u", "GITHUB_TOKEN=g", "OPENAI_API_KEY=k", "EMPTY=", "NOEQUALS"}},
		{"defaults are withheld", e, "other", []string{"OPENAI_API_KEY"},
			[]string{"PATH=/bin", "HOME=/home/u", "GITHUB_TOKEN=g", "EMPTY=", "NOEQUALS"}},
		{"per plugin withhold, and pass beats defaults", e, "deploy", []string{"OPENAI_API_KEY"},
			[]string{"PATH=/bin", "HOME=/home/u", "OPENAI_API_KEY=k", "EMPTY=", "NOEQUALS"}},
		{"an empty value is withheld too", e, "lint", nil,
			[]string{"PATH=/bin", "GITHUB_TOKEN=g", "OPENAI_API_KEY=k", "NOEQUALS"}},
		{"pass beats withhold", e, "aws", nil, environ},
		{"an entry without = is matched by its whole", Env{Withhold: []string{"NOEQUALS"}}, "x", nil, environ[:6]},
		{"a name is not a prefix", Env{Withhold: []string{"PAT", "PATH=/bin"}}, "x", nil, environ},
		{"a missing variable is no matter", Env{Withhold: []string{"ABSENT"}}, "x", []string{"ALSO_ABSENT"}, environ},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(environ)
			got := tc.env.Filter(tc.plugin, in, tc.defaults)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Filter(%q) =\n%q\nwant\n%q", tc.plugin, got, tc.want)
			}
			if !slices.Equal(in, environ) {
				t.Errorf("Filter modified environ: %q", in)
			}
		})
	}
	if got := e.Filter("deploy", nil, []string{"A"}); len(got) != 0 {
		t.Errorf("Filter of no environment = %q", got)
	}
}

// Environment names compare as the operating system compares them.
func TestEnvFilterCase(t *testing.T) {
	got := Env{Withhold: []string{"github_token"}}.Filter("x", []string{"GITHUB_TOKEN=g"}, nil)
	if windows := runtime.GOOS == "windows"; (len(got) == 0) != windows {
		t.Errorf("Filter = %q on %s", got, runtime.GOOS)
	}
}
