package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clusterFlags are the kubeconfig flags a command's help shows under their own heading;
// `gitsync options` lists all of them (as `kubectl options` does).
var clusterFlags = []string{"kubeconfig", "context", "namespace"}

// usage is every command's usage (and the end of its help): the command's own flags
// first, then the few kubeconfig flags people use under "Cluster flags", and a pointer
// to `gitsync options` for the other kubeconfig flags, which would bury the command's.
func usage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, cluster, hidden := splitFlags(c)
	if own.HasAvailableFlags() {
		fmt.Fprintf(w, "\n\nFlags:\n%s", strings.TrimRight(own.FlagUsages(), " \n"))
	}
	if cluster.HasAvailableFlags() {
		fmt.Fprintf(w, "\n\nCluster flags:\n%s", strings.TrimRight(cluster.FlagUsages(), " \n"))
	}
	if len(hidden) > 0 {
		var some []string
		for _, name := range []string{"as", "token", "server", "user", "cluster"} {
			if hidden[name] && len(some) < 3 {
				some = append(some, "--"+name)
			}
		}
		fmt.Fprintf(w, "\n\nUse \"%s options\" for the other %d kubeconfig flags (%s ...), which every command takes.",
			c.Root().Name(), len(hidden), strings.Join(some, ", "))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

// splitFlags sorts c's flags into its own, the clusterFlags among the kubeconfig flags
// it takes, and the names of its other kubeconfig flags (shown by `gitsync options`).
func splitFlags(c *cobra.Command) (own, cluster *pflag.FlagSet, hidden map[string]bool) {
	hidden = map[string]bool{}
	own = pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	cluster = pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	names := kubeFlagNames()
	// A kubeconfig flag is one addKubeFlags gave c (persistent); `run` has a --kubeconfig
	// of its own.
	kube := func(f *pflag.Flag) bool { return names[f.Name] && c.PersistentFlags().Lookup(f.Name) == f }
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		switch {
		case !kube(f):
			own.AddFlag(f)
		case isClusterFlag(f.Name):
			cluster.AddFlag(f)
		case !f.Hidden:
			hidden[f.Name] = true
		}
	})
	// A subcommand (`bootstrap git`) inherits its parent's kubeconfig flags.
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		switch {
		case !names[f.Name]:
			own.AddFlag(f)
		case isClusterFlag(f.Name):
			cluster.AddFlag(f)
		case !f.Hidden:
			hidden[f.Name] = true
		}
	})
	return own, cluster, hidden
}

func isClusterFlag(name string) bool {
	for _, n := range clusterFlags {
		if n == name {
			return true
		}
	}
	return false
}

// kubeFlagNames are the names of the flags addKubeFlags gives a command.
func kubeFlagNames() map[string]bool {
	fs := pflag.NewFlagSet("kube", pflag.ContinueOnError)
	newKubeFlags().AddFlags(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// newOptionsCommand is `gitsync options`: the kubeconfig flags every command takes.
func (o *options) newOptionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "List the kubeconfig flags every command takes (--kubeconfig, --context, -n, --as ...)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := pflag.NewFlagSet("options", pflag.ContinueOnError)
			newKubeFlags().AddFlags(fs)
			return printOptions(o.Out, fs)
		},
	}
}

func printOptions(w io.Writer, fs *pflag.FlagSet) error {
	_, err := fmt.Fprintf(w, "The following options can be passed to any command:\n\n%s", fs.FlagUsages())
	return err
}
