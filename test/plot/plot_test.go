package plot

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChart_WriteSVG(t *testing.T) {
	c := Chart{
		Title:  "soak <test>",
		XLabel: "minutes",
		Panels: []Panel{
			{Title: "RSS (MiB)", YZero: true, Series: []Series{
				{Name: "daemon", Points: []Point{{0, 30}, {1, 31.5}, {2, 31}}},
				{Name: "other", Points: []Point{{0, 10}, {2, 12}}},
			}},
			{Title: "empty"},
		},
	}
	var b strings.Builder
	require.NoError(t, c.WriteSVG(&b))
	out := b.String()
	// Well-formed XML, the title escaped, one polyline per series with
	// one point per sample, and each series in the legend.
	require.NoError(t, xml.Unmarshal([]byte(out), new(struct{})))
	require.Contains(t, out, "soak &lt;test&gt;")
	require.Equal(t, 2, strings.Count(out, "<polyline"))
	require.Contains(t, out, ">daemon</text>")
	require.Contains(t, out, ">other</text>")
	require.Equal(t, 5, strings.Count(out, "<circle"))
	// YZero: the first panel's y axis starts at 0.
	require.Contains(t, out, `text-anchor="end">0</text>`)
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ raw, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {120, 200}, {0, 1},
	} {
		require.InDelta(t, tc.want, niceStep(tc.raw), 1e-9, "niceStep(%v)", tc.raw)
	}
}
