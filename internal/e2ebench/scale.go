package main

import (
	"fmt"
	"strings"
	"time"
)

// runScale measures how subsync's rate holds up as the file grows, over equal spans of time:
// for each queue, in turn, runs times, large/small runs of a small file next to one run of the
// large one, and the large run's rate ÷ the small runs' (their rows ÷ their total time). On a
// machine whose speed drifts (other machines' load), a thirty-second run meets the slow spells
// that half of a series of two-second runs miss: the median of a few small runs against one
// large run understates the large one; small runs spanning as long as it does do not.
func runScale(large, small int, queues []string, dir string, inFlight, batches, runs int, split *coreSplit) error {
	if small <= 0 || large < 2*small {
		return fmt.Errorf("-mode scale: -rows %d must be at least twice -scale-rows %d", large, small)
	}
	dir, cleanup, err := workDir(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	paths := map[int]string{}
	for _, n := range []int{small, large} {
		if paths[n], err = contactsFile(dir, n, "csv"); err != nil {
			return err
		}
	}
	var clients []int
	if split != nil {
		clients = split.clients
		if err := pin(split.emulator); err != nil {
			return err
		}
	}
	k := large / small
	fmt.Printf("e2ebench scale: %d runs of %d rows next to one of %d, queue %s, %d time(s)\n", k, small, large, strings.Join(queues, " and "), runs)
	ratios := map[string][]float64{}
	for i := range runs {
		for _, q := range queues {
			var smallSecs float64
			for range k {
				res, _, err := subsync(paths[small], dir, q, inFlight, batches, clients)
				if err != nil {
					return fmt.Errorf("%d rows on %s: %w", small, q, err)
				}
				smallSecs += res.Seconds
			}
			res, _, err := subsync(paths[large], dir, q, inFlight, batches, clients)
			if err != nil {
				return fmt.Errorf("%d rows on %s: %w", large, q, err)
			}
			if res.Sent != int64(large) {
				return fmt.Errorf("%d rows on %s: sent %d", large, q, res.Sent)
			}
			smallRate, largeRate := float64(k*small)/smallSecs, float64(large)/res.Seconds
			ratios[q] = append(ratios[q], largeRate/smallRate)
			fmt.Printf("%s %d %-8s %d × %d rows: %.2f s (%.0f rows/s); %d rows: %.2f s (%.0f rows/s, staging %.2f s, peak %.0f MB): %.2f×\n",
				time.Now().Format("15:04:05"), i+1, q, k, small, smallSecs, smallRate, large, res.Seconds, largeRate,
				res.StageSeconds, float64(res.VmHWMkB)/1024, largeRate/smallRate)
		}
	}
	for _, q := range queues {
		fmt.Printf("%-8s the large run's rate ÷ the small runs', time by time: %s; median %.2f\n", q, joinFloats(ratios[q]), median(ratios[q]))
	}
	return nil
}
