// Package sourceid names an Application's sources: their keys, their fetch requests, the checkout of a commit and the one chart resolver.
package sourceid
