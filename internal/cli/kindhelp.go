package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// appSetForm is how a verb that takes `app NAME` or `appset NAME` reads for an
// ApplicationSet: its help shows this use line, description and examples, and hides the
// flags only the app form takes.
type appSetForm struct {
	use, long, example string
	appOnly            []string
}

// withAppSetHelp makes `gitsync VERB appset --help` show form instead of the app form's
// help (cobra has one use line per command, and the kind is an argument).
func withAppSetHelp(cmd *cobra.Command, form appSetForm) {
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c != cmd || c.Flags().NArg() == 0 || !isAppSet(c.Flags().Arg(0)) {
			defaultHelp(c, args)
			return
		}
		use, long, example := c.Use, c.Long, c.Example
		hidden := map[string]bool{}
		for _, name := range form.appOnly {
			if f := c.Flags().Lookup(name); f != nil {
				hidden[name] = f.Hidden
				f.Hidden = true
			}
		}
		c.Use, c.Long, c.Example = form.use, form.long, form.example
		defer func() {
			c.Use, c.Long, c.Example = use, long, example
			for name, was := range hidden {
				c.Flags().Lookup(name).Hidden = was
			}
		}()
		defaultHelp(c, args)
	})
}

// defaultHelp is the help c would show without withAppSetHelp: its parent's help
// function (the root's), or cobra's description and usage.
func defaultHelp(c *cobra.Command, args []string) {
	if p := c.Parent(); p != nil {
		p.HelpFunc()(c, args)
		return
	}
	fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s", c.Long, c.UsageString())
}
